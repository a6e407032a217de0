// The forms of the host commands skewless sends over SSH, read as a host reads them (after `sudo -n`
// and `VAR=value`; a program named by its bare name). The simulation refuses a `sim fault` whose
// command can match none of them (sim/hosts/faults.ts), so a fault that waits for a command skewless
// never sends is said at once instead of passing unnoticed; test/security/command-fuzz.test.ts checks
// every command the host activities build against this table, so it cannot fall behind them.

/** One form: its fixed leading words; `more` when words follow them (versions, paths, options). */
export interface HostCommandForm {
  readonly words: readonly string[];
  readonly more: boolean;
}

const form = (line: string, more = true): HostCommandForm => ({ words: line.split(' '), more });

/** Every form the activities send (activities/: package-install-*, package-repository, host-*, etcd-*, readiness/, control-plane-trial). */
export const HOST_COMMAND_FORMS: readonly HostCommandForm[] = [
  // apt (package-install-apt.ts, package-repository.ts, readiness/other-sources.ts)
  form('apt-get update'),
  form('apt-get install'),
  form('apt-mark hold'),
  form('apt-mark unhold'),
  form('apt-mark showhold', false),
  form('apt-cache madison'),
  form('apt-cache policy'),
  form('apt-cache -o'), // the next minors' probe: its own lists, then `madison kubeadm`
  form('dpkg --audit', false),
  form('dpkg --configure -a', false),
  // dnf (package-install-dnf.ts, package-repository.ts, readiness/other-sources.ts)
  form('dnf install'),
  form('dnf list'),
  form('dnf makecache'),
  form('rpm -q'),
  // kubeadm, the kubelet, systemd (host-kubeadm.ts, control-plane-trial.ts, host-kubelet.ts, readiness/hop-prerequisites.ts)
  form('kubeadm upgrade plan'),
  form('kubeadm upgrade apply'),
  form('kubeadm upgrade node'),
  form('kubeadm certs check-expiration'),
  form('kubelet --version', false),
  form('systemctl daemon-reload', false),
  form('systemctl restart kubelet', false),
  // the reboot forms rebootNode accepts (activities/cluster-config.ts REBOOT_COMMANDS)
  form('reboot', false),
  form('systemctl reboot', false),
  form('shutdown -r now', false),
  // etcd (etcd-snapshot.ts, etcd-patch.ts, etcd-restore.ts): etcdctl with its endpoint options or a verb
  form('etcdctl'),
  form('etcdutl snapshot status'),
  form('etcdutl snapshot restore'),
  // files and processes
  form('cat'),
  form('sed -i'),
  form('mkdir -p'),
  form('rm -rf'),
  form('ls -1'),
  form('mv'),
  form('test'),
  form('true', false),
  form('stat -fc'),
  form('grep -F'),
  form('pgrep -a -x'),
  form('pgrep -l -x'),
  form('sha256sum'),
  form('chown'),
];

/** The command with its program by bare name (`/usr/sbin/reboot` is `reboot`), as the forms name them. */
const byProgramName = (argv: readonly string[]): readonly string[] =>
  argv.length ? [(argv[0] as string).replace(/^.*\//, ''), ...argv.slice(1)] : argv;

/**
 * Whether a command that starts with the words of `command` (whole words, as a fault matches: sim/hosts/faults.ts)
 * can be one skewless sends: some form agrees with every word they share, and where they go on past
 * a form's fixed words, the form takes more. `configured` adds the commands an operator configured
 * (maintenance.command), taken whole with whatever follows them.
 */
export function canBeHostCommand(command: readonly string[], configured: readonly (readonly string[])[] = []): boolean {
  const words = byProgramName(command);
  const forms = [...HOST_COMMAND_FORMS, ...configured.map((c) => ({ words: byProgramName(c), more: true }))];
  return forms.some((f) => f.words.every((w, i) => i >= words.length || words[i] === w) && (words.length <= f.words.length || f.more));
}

/** Whether `argv` (a whole command) is one of the forms: the check the command fuzz applies to every command built. */
export function isHostCommandForm(command: readonly string[]): boolean {
  const argv = byProgramName(command);
  return HOST_COMMAND_FORMS.some(
    (f) => f.words.every((w, i) => argv[i] === w) && (f.more ? argv.length >= f.words.length : argv.length === f.words.length),
  );
}
