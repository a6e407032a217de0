import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  PolicyV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';

/** The narrow Kubernetes surface activities use: four typed API groups. */
export interface KubeApi {
  core: CoreV1Api;
  apps: AppsV1Api;
  policy: PolicyV1Api;
  /** Leases: the drain's per-PDB eviction gate across workers (pdb-lease.ts). */
  coordination: CoordinationV1Api;
  /** Admission webhook configurations (predictBlockingDrains); optional, so narrow test doubles need not carry it. */
  admission?: AdmissionregistrationV1Api;
}

/** Clients for a kubeconfig file (and context); credentials never leave the worker. */
export function kubeApiFromFile(kubeconfigPath: string, context?: string): KubeApi {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  if (context) kc.setCurrentContext(context);
  return {
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    admission: kc.makeApiClient(AdmissionregistrationV1Api),
  };
}

/** Request options for a JSON merge patch (the generated client defaults to JSON patch). */
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Request options for a strategic merge patch: keyed lists (containers, conditions) merge by key. */
export const strategicMergePatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
