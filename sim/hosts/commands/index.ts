// Every tool a simulated host has, by the name a command line uses.
import { APT_CACHE_VERBS, aptCache } from './apt-cache.js';
import { APT_GET_VERBS, aptGet } from './apt-get.js';
import { APT_MARK_VERBS, aptMark } from './apt-mark.js';
import type { CommandHandler } from './command.js';
import type { PackageManager } from '../rpm-archive.js';
import { cat, chown, echo, falseCommand, hostname, ls, mkdir, mv, rm, sha256sum, stat, test, trueCommand } from './coreutils.js';
import { etcdctl, etcdutl } from './etcd.js';
import { kubeadm } from './kubeadm.js';
import { kubectl, kubelet } from './kubelet.js';
import { dnf, DNF_VERBS, rpm } from './dnf.js';
import { dpkg } from './dpkg.js';
import { grep } from './grep.js';
import { pgrep } from './pgrep.js';
import { sed } from './sed.js';
import { reboot, systemctl, SYSTEMCTL_VERBS } from './systemd.js';

export const COMMANDS: ReadonlyMap<string, CommandHandler> = new Map<string, CommandHandler>([
  ['apt-get', aptGet],
  ['apt-mark', aptMark],
  ['apt-cache', aptCache],
  ['dpkg', dpkg],
  ['dnf', dnf],
  ['yum', dnf],
  ['rpm', rpm],
  ['kubeadm', kubeadm],
  ['kubelet', kubelet],
  ['kubectl', kubectl],
  ['systemctl', systemctl],
  ['reboot', reboot],
  ['shutdown', reboot],
  ['etcdctl', etcdctl],
  ['etcdutl', etcdutl],
  ['true', trueCommand],
  ['false', falseCommand],
  ['echo', echo],
  ['hostname', hostname],
  ['cat', cat],
  ['ls', ls],
  ['test', test],
  ['sha256sum', sha256sum],
  ['stat', stat],
  ['mkdir', mkdir],
  ['rm', rm],
  ['chown', chown],
  ['mv', mv],
  ['pgrep', pgrep],
  ['sed', sed],
  ['grep', grep],
]);

/**
 * For the tools whose first word after the options is a verb, the verbs this simulation carries out
 * (each tool's own list, the one it checks): any other answers "invalid operation" before it does anything.
 */
const VERBS: ReadonlyMap<string, readonly string[]> = new Map([
  ['apt-get', APT_GET_VERBS],
  ['apt-mark', APT_MARK_VERBS],
  ['apt-cache', APT_CACHE_VERBS],
  ['dnf', DNF_VERBS],
  ['yum', DNF_VERBS],
  ['systemctl', SYSTEMCTL_VERBS],
]);

/** Tools that model where a reboot cuts them (ctx.rebootMidway); for the others it comes before they start. */
export const REBOOTS_MIDWAY: ReadonlySet<CommandHandler> = new Set([aptGet]);

const BIN_DIRS = ['/usr/bin/', '/usr/sbin/', '/bin/', '/sbin/', '/usr/local/bin/'];

/** The package tools of one family: a Debian host has no dnf, a RHEL-family host no apt. */
const PACKAGE_TOOLS: Record<PackageManager, readonly string[]> = {
  apt: ['apt-get', 'apt-mark', 'apt-cache', 'dpkg'],
  dnf: ['dnf', 'yum', 'rpm'],
};
const OTHER_FAMILY: Record<PackageManager, ReadonlySet<string>> = { apt: new Set(PACKAGE_TOOLS.dnf), dnf: new Set(PACKAGE_TOOLS.apt) };

/** The tool for argv[0]: a bare name, or one of the usual bin directories (`/usr/bin/kubeadm`). */
export function lookupCommand(
  name: string,
  packageManager: PackageManager = 'apt',
): { name: string; handler: CommandHandler; verbs?: readonly string[] } | undefined {
  const dir = BIN_DIRS.find((d) => name.startsWith(d));
  const base = dir ? name.slice(dir.length) : name;
  if (OTHER_FAMILY[packageManager].has(base)) return undefined;
  const handler = COMMANDS.get(base);
  const verbs = VERBS.get(base);
  return handler ? { name: base, handler, ...(verbs ? { verbs } : {}) } : undefined;
}
