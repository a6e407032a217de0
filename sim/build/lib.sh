# Shared by the build scripts of the simulated cluster (sourced, not run). The caller sets `tag`,
# a prefix for its log lines (e.g. "build-binaries"), takes its lock (take_build_lock) and makes its
# scratch dir (make_work). build_kubernetes changes the working directory ("$work" when it returns).

log() { echo "$tag: $*" >&2; }
die() { echo "$tag: ERROR: $*" >&2; exit 1; }
ticker=0 builder=0

# take_build_lock DIR: one builder per cache dir (fd 9 on DIR.lock); a second run waits for the first.
take_build_lock() {
  exec 9>"$1.lock"
  if ! flock -n 9; then
    log "another build of $1 is running; waiting for it"
    flock 9
  fi
}

# make_work DIR: $work, a scratch dir under DIR, removed on exit with run_step's children stopped.
make_work() {
  work=$(mktemp -d "$1/.build.XXXXXX")
  trap cleanup_work EXIT
  trap 'die "interrupted"' INT TERM
}
cleanup_work() {
  local p
  for p in "$ticker" "$builder"; do
    if [[ $p != 0 ]]; then kill "$p" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}

# run_step LABEL LOGFILE CMD...: runs CMD with its output in LOGFILE, prints a line every 30 s,
# and on failure shows the end of the log and stops the script.
run_step() {
  local label=$1 logf=$2; shift 2
  local t0 rc=0
  t0=$(date +%s)
  log "$label ..."
  # 9>&-: children must not hold the caller's lock after the script ends.
  "$@" >"$logf" 2>&1 9>&- &
  builder=$!
  ( trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    while :; do
      sleep 30 & sp=$!; wait "$sp"
      log "$label: still running, $(( $(date +%s) - t0 ))s elapsed, $(grep -c . "$logf" || true) lines of go output (packages compiled / modules fetched)"
    done ) 9>&- &
  ticker=$!
  wait "$builder" || rc=$?
  builder=0
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  ticker=0
  if (( rc != 0 )); then
    tail -n 40 "$logf" >&2
    die "$label failed (exit $rc; last lines of $logf above, the log is removed on exit)"
  fi
  log "$label done in $(( $(date +%s) - t0 ))s"
}

# mod_json MODULE@VERSION: `go mod download -json` (downloads it); json_field NAME picks one
# field (GoMod, Dir, Info ...) of that JSON from stdin.
mod_json() { (cd "$work" && go mod download -json "$@"); }
json_field() { node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{const j=JSON.parse(s);if(j.Error){console.error(j.Error);process.exit(1)}console.log(j[process.argv[1]]||"")})' "$1"; }

# build_kubernetes VERSION BIN_DIR CMD...: builds k8s.io/kubernetes/cmd/<CMD> of VERSION (v1.34.4)
# into BIN_DIR. Upstream's go.mod requires every staging module at v0.0.0 and replaces it with
# ./staging/src/...; those replaces are ignored for a dependency, so a wrapper module replaces each
# with its published tag (v0.<minor>.<patch>). Version ldflags as upstream's hack/lib/version.sh
# sets them; buildDate is the tag's time (reproducible), the commit unknown from the proxy.
build_kubernetes() {
  local k8s=$1 out=$2; shift 2
  local cmds=("$@") k8s_minor staging
  [[ $k8s =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "kubernetes version must look like v1.34.4, got '$k8s'"
  k8s_minor=${BASH_REMATCH[1]}
  staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
  local info gomod info_file k8s_time go_line godebug_line
  info=$(mod_json "k8s.io/kubernetes@$k8s") ||
    die "cannot download k8s.io/kubernetes@$k8s from the Go module proxy: $(sed -nE 's/.*"Error": "(.*)",?$/\1/p' <<<"$info")"
  gomod=$(json_field GoMod <<<"$info")
  info_file=$(json_field Info <<<"$info")
  k8s_time=$(json_field Time <"$info_file") # the tag's time, from the proxy's .info
  [[ $k8s_time =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]] || die "no tag time in $info_file"
  local staging_mods
  mapfile -t staging_mods < <(sed -nE 's#^[[:space:]]*(k8s\.io/[A-Za-z0-9._-]+)[[:space:]]+=>[[:space:]]+\./staging/src/.*#\1#p' "$gomod")
  (( ${#staging_mods[@]} >= 20 )) || die "found only ${#staging_mods[@]} staging replaces in $gomod; the go.mod layout changed"
  # The proxy may not serve every staging module at every patch (here k8s.io/endpointslice has no
  # v0.32.13): such a module is pinned to its newest served patch of the same minor below, and said.
  local -A pin=()
  local mod versions v best patch=${staging##*.} minor_prefix=${staging%.*}.
  for mod in "${staging_mods[@]}"; do
    pin[$mod]=$staging
    (cd "$work" && go mod download "$mod@$staging" >/dev/null 2>&1) && continue
    versions=$(cd "$work" && go list -e -m -versions "$mod" 2>/dev/null)
    best=""
    for v in ${versions#* }; do
      [[ $v == "$minor_prefix"* && ${v##*.} =~ ^[0-9]+$ ]] || continue
      if (( ${v##*.} < patch )) && [[ -z $best || ${v##*.} -gt ${best##*.} ]]; then best=$v; fi
    done
    # None at all (e.g. k8s.io/sample-controller, which nothing built imports): left to the build.
    [[ -n $best ]] || continue
    log "k8s $k8s: the module proxy does not serve $mod $staging; using $best, its newest patch below"
    pin[$mod]=$best
  done
  go_line=$(grep -m1 -E '^go [0-9.]+$' "$gomod") || die "no go line in $gomod"
  godebug_line=$(grep -m1 -E '^godebug ' "$gomod" || true)
  local wdir="$work/k8s-$k8s" m b p
  mkdir -p "$wdir"
  {
    echo "module skewless.local/simcluster/k8sbuild"
    echo
    echo "$go_line"
    if [[ -n $godebug_line ]]; then echo; echo "$godebug_line"; fi
    echo
    echo "require k8s.io/kubernetes $k8s"
    echo
    echo "replace ("
    for m in "${staging_mods[@]}"; do printf '\t%s => %s %s\n' "$m" "$m" "${pin[$m]}"; done
    echo ")"
    echo
    echo "tool ("
    for b in "${cmds[@]}"; do printf '\tk8s.io/kubernetes/cmd/%s\n' "$b"; done
    echo ")"
  } >"$wdir/go.mod"
  log "k8s $k8s: wrapper go.mod pins ${#staging_mods[@]} staging modules to $staging (but for any said above)"
  cd "$wdir"
  run_step "k8s $k8s: go mod tidy (module download)" "$wdir/tidy.log" go mod tidy
  local ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$k8s -X $p.gitMajor=1 -X $p.gitMinor=$k8s_minor -X $p.gitTreeState=clean"
    ld+=" -X $p.gitCommit= -X $p.buildDate=$k8s_time"
  done
  local pkgs=()
  for b in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  mkdir -p "$out"
  run_step "k8s $k8s: go build ${cmds[*]} (cold: about 5 min on 2 cores)" "$wdir/build.log" \
    go build -v -trimpath -tags=notest,grpcnotrace -ldflags="$ld" -o "$out/" "${pkgs[@]}"
  cd "$work"
  local got
  for b in "${cmds[@]}"; do
    case $b in
      kubectl) got=$("$out/$b" version --client 2>&1) || die "$out/$b version --client failed: $got" ;;
      kubeadm) got=$("$out/$b" version -o short 2>&1) || die "$out/$b version failed: $got" ;;
      *) got=$("$out/$b" --version 2>&1) || die "$out/$b --version failed: $got" ;;
    esac
    [[ $got == *"$k8s"* ]] || die "$b says its version is '$got', expected $k8s"
  done
}
