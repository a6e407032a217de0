import { KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { kubeApiFromFile, type KubeApi } from '../../activities/kube-api.js';

// The simulation talks to its API with the product's own client wiring.
export { mergePatch, strategicMergePatch } from '../../activities/kube-api.js';
export type KubeClients = KubeApi & { rbac: RbacAuthorizationV1Api };
export function kubeClients(kubeconfigPath: string): KubeClients {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return { ...kubeApiFromFile(kubeconfigPath), rbac: kc.makeApiClient(RbacAuthorizationV1Api) };
}

/** Runs `task` over `items` with at most `limit` in flight. */
export async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  });
  await Promise.all(workers);
}

/** The HTTP status of a client-node error, if it has one. */
export function statusOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' ? code : undefined;
}
