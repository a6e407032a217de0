import { KubeConfig, type V1Pod, Watch } from '@kubernetes/client-node';
import { statusOf, strategicMergePatch, type KubeClients } from './kube-clients.js';
import { NOT_READY_LABEL } from './kube-effects.js';

/**
 * A kubelet owns its pods' status: its status manager compares what the API server holds with its own
 * every 10 s (pkg/kubelet/status, syncPeriod) and writes it back where they differ. kwok readies only
 * Pending pods, so the simulation does that part: a Running pod whose containers are ready but whose
 * Ready condition is False, on a node that is Ready, is reported Ready again.
 *
 * Where such a pod comes from: the node controller marks a pod not Ready when it lands on a node its
 * health map still holds NotReady. At 1,000 nodes that map lagged by minutes behind the kubelets'
 * restarts, and a pod scheduled onto an uncordoned node stayed not Ready for good, halting the upgrade
 * at its workload check (999/1000 replicas available).
 */

/** Half the kubelet's 10 s sync loop: where in its period a change lands is even odds. */
export const STATUS_SYNC_DELAY_MS = 5_000;

const condition = (pod: V1Pod, type: string) => pod.status?.conditions?.find((c) => c.type === type)?.status;
const markedNotReady = (pod: V1Pod) =>
  !pod.metadata?.deletionTimestamp && condition(pod, 'ContainersReady') === 'True' && condition(pod, 'Ready') === 'False';

export function startKubeletStatusSync(kubeconfigPath: string, kube: KubeClients, delayMs = STATUS_SYNC_DELAY_MS): { stop(): void } {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const watch = new Watch(kc);
  let stopped = false;
  let request: AbortController | undefined;
  const due = new Map<string, NodeJS.Timeout>();

  const nodeReady = async (name: string) => {
    const node = await kube.core.readNode({ name });
    return !node.metadata?.labels?.[NOT_READY_LABEL] && node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  };
  const sync = async (namespace: string, name: string) => {
    const pod = await kube.core.readNamespacedPod({ name, namespace });
    const node = pod.spec?.nodeName;
    if (!node || pod.status?.phase !== 'Running' || !markedNotReady(pod) || !(await nodeReady(node))) return;
    const conditions = [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() }];
    await kube.core.patchNamespacedPodStatus({ name, namespace, body: { status: { conditions } } }, strategicMergePatch);
  };
  const onEvent = (type: string, pod: V1Pod) => {
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    if (stopped || type === 'DELETED' || type === 'BOOKMARK' || !markedNotReady(pod) || due.has(key)) return;
    const timer = setTimeout(() => {
      due.delete(key);
      if (stopped) return;
      sync(pod.metadata?.namespace as string, pod.metadata?.name as string).catch((err: unknown) => {
        if (statusOf(err) !== 404 && !stopped) console.error(`[sim/kubelet-status] ${key}: ${(err as Error).message}`);
      });
    }, delayMs).unref();
    due.set(key, timer);
  };
  const start = () => {
    if (stopped) return;
    // A watch from now: the pods already marked come as ADDED events first.
    watch
      .watch('/api/v1/pods', { fieldSelector: 'status.phase=Running' }, onEvent, () => {
        if (!stopped) setTimeout(start, 1_000).unref(); // the server ends watches now and then: watch again
      })
      .then((r) => {
        request = r;
        if (stopped) r.abort();
      })
      .catch(() => {
        if (!stopped) setTimeout(start, 1_000).unref();
      });
  };
  start();
  return {
    stop() {
      stopped = true;
      request?.abort();
      for (const t of due.values()) clearTimeout(t);
      due.clear();
    },
  };
}
