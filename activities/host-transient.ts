// Which failed host commands are worth running again. A command that exits non-zero is reported to
// the operator (HostCommandFailed, never retried blindly) unless its own message says the cause
// passes by itself: a package mirror out of reach, the dpkg lock held by unattended-upgrades, an
// API server that timed out under kubeadm. Those are retried by the activity's profile.
import type { ExecResult } from './cluster-access.js';

/** Messages of apt (update, install) that name a cause outside the host that goes away. */
const APT_TRANSIENT = [
  /^E: Failed to fetch /m,
  /Temporary failure resolving/,
  /Could not resolve '/,
  /Could not connect to /,
  /Connection timed out/,
  /Connection failed/,
  /Unable to fetch some archives/,
  /Some index files failed to download/,
  /Hash Sum mismatch/,
  /^E: Could not get lock /m,
  /Unable to acquire the dpkg frontend lock/,
  /Unable to lock the administration directory/,
];

/**
 * dnf's (and yum's) messages for a mirror out of reach: librepo's curl errors (6 cannot resolve,
 * 7 cannot connect, 28 timeout, 35 TLS, 56 receive). A 404 ("Status code: 404") is not among them:
 * a missing minor does not come back by itself.
 */
const DNF_TRANSIENT = [/Curl error \((?:6|7|28|35|56)\)/, /Could not resolve host/, /Operation timed out after/];

/** kubeadm talks to the API server and etcd: a timeout or a refused connection there is worth another try. */
const KUBEADM_TRANSIENT = [
  /timed out waiting for the condition/,
  /context deadline exceeded/,
  /connect: connection refused/,
  /i\/o timeout/,
  /TLS handshake timeout/,
  /etcdserver: request timed out/,
  /the server is currently unable to handle the request/,
  /the object has been modified; please apply your changes to the latest version/,
  // `upgrade apply`'s preflight Job (kubernetes@v1.33 cmd/kubeadm/app/phases/upgrade/health.go createJob, 15 s):
  // not done while the controller-manager or scheduler leases pass to a new holder after a control plane's restart.
  /\[ERROR CreateJob\]: Job "upgrade-health-check-[^"]*" in the namespace "kube-system" did not complete/,
];

/** The tool a command line runs (`apt-get`, `kubeadm`), past any `sudo` or `VAR=value` the caller added. */
function tool(argv: readonly string[]): string {
  return (argv.find((w) => w !== 'sudo' && !w.startsWith('-') && !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) ?? '').split('/').at(-1) ?? '';
}

/** Whether a non-zero exit of `argv` is one that passes by itself, from the command's own output. */
export function isTransientFailure(argv: readonly string[], result: ExecResult): boolean {
  if (result.exitCode === 0 || result.exitCode === 127 || result.exitCode === 126) return false; // not found / not executable: never passes
  const text = `${result.stderr}\n${result.stdout}`;
  const name = tool(argv);
  const patterns =
    name === 'apt-get' || name === 'apt'
      ? APT_TRANSIENT
      : name === 'dnf' || name === 'yum'
        ? DNF_TRANSIENT
        : name === 'kubeadm'
          ? KUBEADM_TRANSIENT
          : [];
  return patterns.some((p) => p.test(text));
}
