import { AppsV1Api, CoreV1Api, KubeConfig, PolicyV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

export interface KubeClients {
  core: CoreV1Api;
  apps: AppsV1Api;
  policy: PolicyV1Api;
}

export function kubeClients(kubeconfigPath: string): KubeClients {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return { core: kc.makeApiClient(CoreV1Api), apps: kc.makeApiClient(AppsV1Api), policy: kc.makeApiClient(PolicyV1Api) };
}

/** Request options for a JSON merge patch (the generated client defaults to JSON patch). */
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

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

/** Request options for a strategic merge patch: keyed lists (containers) merge by name. */
export const strategicMergePatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
