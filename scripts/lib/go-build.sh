# Sourced by the ensure-*.sh scripts that build a program from the Go module proxy once into a cache
# folder keyed by its version (Temporal server, Temporal UI server, Helm): the cached answer, one builder
# per folder, a scratch folder, progress while `go` works, the failure's log, the completion mark.

# go_build_begin TAG DIR READY OUT WHAT: prints OUT and exits 0 when the command READY holds; else needs
# go, takes DIR's lock (a second run waits for the first and then finds it built), asks READY again,
# and sets `work` (a scratch folder in DIR, removed at exit) and `start`. The lock is fd 9: a build
# started in the background must close it (`9>&-`) so that it does not hold the lock after we exit.
go_build_begin() {
  local tag=$1 dir=$2 ready=$3 out=$4 what=$5
  if $ready; then
    echo "$out"
    exit 0
  fi
  command -v go >/dev/null || { echo "$tag: go is not installed; it is needed once to build $what" >&2; exit 1; }
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  if ! flock -n 9; then
    echo "$tag: another build of $dir is running; waiting for it" >&2
    flock 9
  fi
  if $ready; then
    echo "$out"
    exit 0
  fi
  mkdir -p "$dir"
  work=$(mktemp -d "$dir/.build.XXXXXX")
  # Not `kill "${ticker:-0}"`, as the scripts had it: before the ticker starts that is kill 0, which
  # signals this whole process group, the caller's shell (npm test) included.
  trap '[[ -z ${go_build_ticker:-} ]] || kill "$go_build_ticker" 2>/dev/null || true; rm -rf "$work"' EXIT
  start=$(date +%s)
}

# go_build_wait TAG BUILDER WHAT [UNIT]: waits for the background build BUILDER (its output in
# $work/build.log, one line per package with -v), saying every 30 s how far it is; on failure prints
# the log's end and "TAG: WHAT failed", exit 1.
go_build_wait() {
  local tag=$1 builder=$2 what=$3 unit=${4:-lines of go output}
  ( while sleep 30; do
      echo "$tag: still building ($(( $(date +%s) - start ))s, $(wc -l <"$work/build.log") $unit)" >&2
    done ) 9>&- &
  go_build_ticker=$!
  if ! wait "$builder"; then
    tail -n 30 "$work/build.log" >&2
    echo "$tag: $what failed (log above)" >&2
    exit 1
  fi
  kill "$go_build_ticker" 2>/dev/null || true
}

# go_build_done TAG DIR VERSION: marks DIR complete (what READY checks) and says how long it took.
go_build_done() {
  local tag=$1 dir=$2 version=$3
  echo "$version built in $(( $(date +%s) - start ))s" >"$dir/.complete"
  echo "$tag: built in $(( $(date +%s) - start ))s" >&2
}
