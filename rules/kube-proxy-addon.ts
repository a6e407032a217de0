/**
 * kubeadm redeploys its kube-proxy addon at every `upgrade apply` unless told not to (kubeadm#1318): a
 * cluster that replaced kube-proxy (Cilium's kube-proxy replacement) would get it back. From 1.32
 * `upgrade apply` has phases and `--skip-phases=addon/kube-proxy` (kubernetes PR #126032). Pure: the
 * configuration's mode, whether the DaemonSet exists and the hop's version in, the decision out.
 */
import { compareVersions, parseVersion } from './version.js';

export const SKIP_KUBE_PROXY_PHASE = '--skip-phases=addon/kube-proxy';
/** The first kubeadm whose `upgrade apply` takes --skip-phases. */
export const APPLY_PHASES_SINCE = '1.32.0';

/** `auto`: skip when the cluster has no kube-proxy DaemonSet; `absent`: always skip; `present`: never. */
export type KubeProxyMode = 'auto' | 'absent' | 'present';

/** Whether `kubeadm upgrade apply v<version>` skips the kube-proxy addon phase. */
export function skipsKubeProxyPhase(mode: KubeProxyMode, daemonSetExists: boolean, version: string): boolean {
  if (compareVersions(parseVersion(version), parseVersion(APPLY_PHASES_SINCE)) < 0) return false;
  return mode === 'absent' || (mode === 'auto' && !daemonSetExists);
}
