import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { V1ClusterRole, V1ClusterRoleBinding, V1PolicyRule, V1Role, V1RoleBinding } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { statusOf, type KubeClients } from './kube-clients.js';

/** The worker's RBAC manifest, the one operators apply (from dist/sim/cluster/ to the repository's deploy/). */
export const RBAC_MANIFEST_PATH = fileURLToPath(new URL('../../../deploy/rbac.yaml', import.meta.url));

export type RbacObject =
  | ({ kind: 'ClusterRole' } & V1ClusterRole)
  | ({ kind: 'Role' } & V1Role)
  | ({ kind: 'ClusterRoleBinding' } & V1ClusterRoleBinding)
  | ({ kind: 'RoleBinding' } & V1RoleBinding);

const KINDS = ['ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding'];

/** The manifest's objects, checked to be RBAC objects only (anything else would not be applied). */
export function readRbacManifest(path = RBAC_MANIFEST_PATH): RbacObject[] {
  const out: RbacObject[] = [];
  for (const [i, doc] of parseAllDocuments(readFileSync(path, 'utf8')).entries()) {
    if (doc.errors.length > 0) throw new Error(`${path}: document ${i + 1}: ${doc.errors[0]?.message}`);
    const o = doc.toJS() as { apiVersion?: string; kind?: string; metadata?: { name?: string } } | null;
    if (o === null) continue;
    if (o.apiVersion !== 'rbac.authorization.k8s.io/v1' || !KINDS.includes(o.kind ?? '') || !o.metadata?.name) {
      throw new Error(`${path}: document ${i + 1} is not a named rbac.authorization.k8s.io/v1 ${KINDS.join('/')}`);
    }
    out.push(o as RbacObject);
  }
  return out;
}

/** One permission a rule grants: the unit the audit log can show used (or refused). */
export interface Grant {
  apiGroup: string;
  /** `pods/eviction` for a subresource; empty for a non-resource URL. */
  resource: string;
  verb: string;
  /** A Role's namespace; cluster-wide when absent. */
  namespace?: string;
  resourceNames?: string[];
  nonResourceURL?: string;
}

/** Every (apiGroup, resource, verb) — or (URL, verb) — the manifest's roles grant, one entry each. */
export function grantsOf(objects: RbacObject[]): Grant[] {
  const grants: Grant[] = [];
  for (const o of objects) {
    if (o.kind !== 'ClusterRole' && o.kind !== 'Role') continue;
    const namespace = o.kind === 'Role' ? (o.metadata?.namespace ?? 'default') : undefined;
    for (const rule of (o.rules ?? []) as V1PolicyRule[]) {
      for (const verb of rule.verbs) {
        for (const url of rule.nonResourceURLs ?? []) grants.push({ apiGroup: '', resource: '', verb, nonResourceURL: url });
        for (const apiGroup of rule.apiGroups ?? []) {
          for (const resource of rule.resources ?? []) {
            grants.push({
              apiGroup,
              resource,
              verb,
              ...(namespace ? { namespace } : {}),
              ...(rule.resourceNames?.length ? { resourceNames: rule.resourceNames } : {}),
            });
          }
        }
      }
    }
  }
  return grants;
}

/** The users and service accounts the manifest's bindings name. */
export function subjectsOf(objects: RbacObject[]): string[] {
  return [
    ...new Set(
      objects.flatMap((o) =>
        (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding' ? (o.subjects ?? []) : []).map((s) =>
          s.kind === 'ServiceAccount' ? `system:serviceaccount:${s.namespace}:${s.name}` : s.name,
        ),
      ),
    ),
  ].sort();
}

/** Creates the manifest's objects with the admin clients, replacing any of the same name (a restarted simulation). */
export async function applyRbacManifest(kube: KubeClients, objects: RbacObject[] = readRbacManifest()): Promise<void> {
  const { rbac } = kube;
  for (const o of objects) {
    const name = o.metadata?.name as string;
    const namespace = o.metadata?.namespace ?? 'default';
    const create = (): Promise<unknown> => {
      switch (o.kind) {
        case 'ClusterRole':
          return rbac.createClusterRole({ body: o });
        case 'Role':
          return rbac.createNamespacedRole({ namespace, body: o });
        case 'ClusterRoleBinding':
          return rbac.createClusterRoleBinding({ body: o });
        case 'RoleBinding':
          return rbac.createNamespacedRoleBinding({ namespace, body: o });
      }
    };
    const replace = (): Promise<unknown> => {
      switch (o.kind) {
        case 'ClusterRole':
          return rbac.replaceClusterRole({ name, body: o });
        case 'Role':
          return rbac.replaceNamespacedRole({ name, namespace, body: o });
        case 'ClusterRoleBinding':
          return rbac.replaceClusterRoleBinding({ name, body: o });
        case 'RoleBinding':
          return rbac.replaceNamespacedRoleBinding({ name, namespace, body: o });
      }
    };
    try {
      await create();
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      await replace();
    }
  }
}
