import type { CoreV1Event, V1Node } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import type { ClusterResolver } from './cluster-access.js';
import { ErrorType, httpStatus, kubeCall, kubeFailure, retryOnConflict } from './errors.js';
import { mergePatch, type KubeApi } from './kube-api.js';

import { QUARANTINED_LABEL } from '../rules/index.js';

export { QUARANTINED_LABEL };
/** Who quarantined the node (a workflow id is no valid label value: an annotation, like the cordon's owner). */
export const QUARANTINED_BY_ANNOTATION = 'skewless.io/quarantined-by';
/** The Event's reason, as `kubectl describe node` and `kubectl get events --field-selector reason=` show it. */
export const QUARANTINED_REASON = 'SkewlessQuarantined';
/** Node events live in `default`, as the kubelet's and the node controller's do (a Node has no namespace). */
const EVENT_NAMESPACE = 'default';

export interface QuarantineInput {
  cluster: string;
  node: string;
  owner: string;
  /** The hop whose drain did not finish (the label's value). */
  hop: string;
  /** Why: the drain's own report (the pods left and the PDBs in their way). */
  message: string;
}

export interface QuarantineResult {
  /** Whether the label was written now (false: already there from this hop). */
  labelled: boolean;
  /** Whether the Event was created now (false: recorded by an earlier attempt). */
  recorded: boolean;
}

/**
 * Marks a node the run leaves out: the label (selectable: `kubectl get nodes -l skewless.io/quarantined`)
 * with its owner, and a Warning Event on the Node naming the pods that blocked its drain. The node's
 * cordon is not touched (it stays cordoned, by this run). Idempotent: the label is compared first, the
 * Event has a name fixed by node and hop, so a retry finds it (409) instead of recording it twice.
 */
export function createQuarantineActivities(deps: { clusters: ClusterResolver }) {
  return {
    async quarantineNode(input: QuarantineInput): Promise<QuarantineResult> {
      const { kube } = deps.clusters(input.cluster);
      if (!input.owner || !input.hop)
        throw ApplicationFailure.create({ type: ErrorType.Invalid, message: 'quarantine needs an owner and a hop', nonRetryable: true });
      // The node-lifecycle controller writes a Node right after its cordon: a guarded write that meets it re-reads here.
      const { node, labelled } = await retryOnConflict(async () => {
        const node: V1Node = await kubeCall(`read node ${input.node}`, () => kube.core.readNode({ name: input.node }));
        const m = node.metadata ?? {};
        const labelled = m.labels?.[QUARANTINED_LABEL] !== input.hop || m.annotations?.[QUARANTINED_BY_ANNOTATION] !== input.owner;
        if (labelled) {
          const body = {
            metadata: {
              labels: { [QUARANTINED_LABEL]: input.hop },
              annotations: { [QUARANTINED_BY_ANNOTATION]: input.owner },
              resourceVersion: m.resourceVersion,
            },
          };
          await kubeCall(`label node ${input.node} ${QUARANTINED_LABEL}=${input.hop}`, () =>
            kube.core.patchNode({ name: input.node, body }, mergePatch),
          );
        }
        return { node, labelled };
      });
      const m = node.metadata ?? {};
      const now = new Date();
      const event: CoreV1Event = {
        metadata: { name: `${input.node}.skewless-quarantined.${input.hop.replace(/[^a-z0-9]/g, '-')}`, namespace: EVENT_NAMESPACE },
        involvedObject: { apiVersion: 'v1', kind: 'Node', name: input.node, ...(m.uid ? { uid: m.uid } : {}) },
        reason: QUARANTINED_REASON,
        type: 'Warning',
        message: `${input.message}; quarantined by ${input.owner} at hop ${input.hop}: left cordoned at its old version, the run goes on without it`,
        source: { component: 'skewless' },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      let recorded = true;
      try {
        await kube.core.createNamespacedEvent({ namespace: EVENT_NAMESPACE, body: event });
      } catch (err) {
        if (httpStatus(err) !== 409) throw kubeFailure(err, `record event ${QUARANTINED_REASON} on node ${input.node}`);
        recorded = false; // an earlier attempt recorded it
      }
      return { labelled, recorded };
    },
  };
}

/**
 * A quarantine lasts as long as its cordon: the label (and its owner) goes from each node `owner`
 * quarantined that is back in service (a later run drained, moved and uncordoned it, or the operator
 * uncordoned it). A node still cordoned keeps it. Called where a run clears its stage labels.
 */
export async function releaseQuarantines(kube: KubeApi, owner: string): Promise<string[]> {
  const { items } = await kubeCall('list quarantined nodes', () => kube.core.listNode({ labelSelector: QUARANTINED_LABEL }));
  const releasable = (node: V1Node) => !node.spec?.unschedulable && node.metadata?.annotations?.[QUARANTINED_BY_ANNOTATION] === owner;
  const released: string[] = [];
  for (const listed of items.filter(releasable)) {
    const name = listed.metadata?.name as string;
    // A conflict is a controller's write meanwhile: re-read, and release only if it is still in service and ours.
    const done = await retryOnConflict(async () => {
      const node = await kubeCall(`read node ${name}`, () => kube.core.readNode({ name }));
      if (!releasable(node)) return false;
      const body = {
        metadata: {
          labels: { [QUARANTINED_LABEL]: null },
          annotations: { [QUARANTINED_BY_ANNOTATION]: null },
          resourceVersion: node.metadata?.resourceVersion,
        },
      };
      await kubeCall(`release the quarantine of node ${name}`, () => kube.core.patchNode({ name, body }, mergePatch));
      return true;
    });
    if (done) released.push(name);
  }
  return released.sort();
}

export type QuarantineActivities = ReturnType<typeof createQuarantineActivities>;
