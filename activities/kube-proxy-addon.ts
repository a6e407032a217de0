import { skipsKubeProxyPhase, SKIP_KUBE_PROXY_PHASE } from '../rules/index.js';
import type { ClusterConfig } from './cluster-config.js';
import { httpStatus, kubeFailure } from './errors.js';
import type { KubeApi } from './kube-api.js';

/** Whether kubeadm's kube-proxy addon (kube-system/kube-proxy) is in the cluster. */
export async function kubeProxyDaemonSetExists(kube: KubeApi): Promise<boolean> {
  try {
    await kube.apps.readNamespacedDaemonSet({ name: 'kube-proxy', namespace: 'kube-system' });
    return true;
  } catch (err) {
    if (httpStatus(err) === 404) return false;
    throw kubeFailure(err, 'read DaemonSet kube-system/kube-proxy');
  }
}

/**
 * The flags a control plane's `kubeadm upgrade apply v<version>` or `upgrade node` gets for the kube-proxy addon
 * (rules/kube-proxy-addon.ts): none, or the skip. Both: in an HA cluster kubeadm moves the addons at the last
 * control plane's `upgrade node`, once every control plane runs the new version, not at `apply`.
 */
export async function kubeProxyPhaseFlags(kube: KubeApi, config: ClusterConfig, version: string): Promise<string[]> {
  const mode = config.addons?.kubeProxy ?? 'auto';
  if (mode === 'present') return [];
  return skipsKubeProxyPhase(mode, mode === 'auto' ? await kubeProxyDaemonSetExists(kube) : false, version) ? [SKIP_KUBE_PROXY_PHASE] : [];
}
