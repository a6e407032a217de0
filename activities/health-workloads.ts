import type { V1DaemonSet, V1Deployment, V1StatefulSet } from '@kubernetes/client-node';

/** One workload that is not fully rolled out and available, with the numbers that say so. */
export interface UnhealthyWorkload {
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet';
  namespace: string;
  name: string;
  /** One line: which numbers fall short. */
  reason: string;
}

type Meta = { metadata?: { name?: string; namespace?: string; generation?: number }; status?: { observedGeneration?: number } };

function verdict(kind: UnhealthyWorkload['kind'], o: Meta, shortfalls: string[]): UnhealthyWorkload | undefined {
  // A status older than the spec describes the previous spec: not yet judged means not yet healthy.
  if ((o.status?.observedGeneration ?? 0) < (o.metadata?.generation ?? 0))
    shortfalls.unshift('its controller has not observed the latest spec');
  if (shortfalls.length === 0) return undefined;
  return { kind, namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '', reason: shortfalls.join('; ') };
}

/** Available = every desired replica updated to the current template and available. */
export function judgeDeployment(d: V1Deployment): UnhealthyWorkload | undefined {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  const short: string[] = [];
  if ((s.updatedReplicas ?? 0) < want) short.push(`${s.updatedReplicas ?? 0}/${want} replicas updated`);
  if ((s.availableReplicas ?? 0) < want) short.push(`${s.availableReplicas ?? 0}/${want} replicas available`);
  return verdict('Deployment', d, short);
}

export function judgeStatefulSet(st: V1StatefulSet): UnhealthyWorkload | undefined {
  const want = st.spec?.replicas ?? 1;
  const s = st.status ?? { replicas: 0 };
  const short: string[] = [];
  if ((s.readyReplicas ?? 0) < want) short.push(`${s.readyReplicas ?? 0}/${want} replicas ready`);
  // OnDelete sets never update on their own: their updatedReplicas says nothing about health.
  if (st.spec?.updateStrategy?.type !== 'OnDelete' && (s.updatedReplicas ?? 0) < want)
    short.push(`${s.updatedReplicas ?? 0}/${want} replicas updated`);
  return verdict('StatefulSet', st, short);
}

export function judgeDaemonSet(ds: V1DaemonSet): UnhealthyWorkload | undefined {
  const s = ds.status ?? { currentNumberScheduled: 0, desiredNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0 };
  const want = s.desiredNumberScheduled;
  const short: string[] = [];
  if (s.numberReady !== want) short.push(`${s.numberReady}/${want} pods ready`);
  if ((s.updatedNumberScheduled ?? 0) !== want) short.push(`${s.updatedNumberScheduled ?? 0}/${want} pods updated`);
  return verdict('DaemonSet', ds, short);
}
