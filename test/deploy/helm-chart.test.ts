// deploy/helm/skewless-worker: `helm lint --strict` clean, `helm template` read back, and what it renders
// applied to the simulation's real kube-apiserver with a server-side dry run (admission, schema and
// RBAC validation of the real API server; nothing is created). Helm is built from the Go module proxy
// (scripts/ensure-helm.sh).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { ensureSimBinaries } from '../../sim/cluster/binaries.js';
import { repoRoot } from '../helpers/run-cli.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { tempDir } from '../helpers/temp-dir.js';

const CHART = join(repoRoot, 'deploy', 'helm', 'skewless-worker');
const NAMESPACE = 'skewless';
const DESCRIPTION = `
name: mgmt
version: 1.34.4
repository: [1.34.4]
nodes:
  - {name: cp, role: control-plane}
`;
/** Every optional part switched on: TLS, API key, payload key, a claim for the snapshots, and rights asked for. */
const EVERYTHING = [
  ['rbac.rules[0].apiGroups[0]', ''],
  ['rbac.rules[0].resources[0]', 'configmaps'],
  ['rbac.rules[0].verbs[0]', 'get'],
  ['temporal.tls.enabled', 'true'],
  ['temporal.tls.secretName', 'temporal-client'],
  ['temporal.tls.serverName', 'temporal.example.com'],
  ['temporal.apiKeySecret.name', 'temporal-api-key'],
  ['temporal.payloadKeySecret.name', 'payload-key'],
  ['snapshots.existingClaim', 'skewless-snapshots'],
].flatMap(([k, v]) => ['--set', `${k}=${v}`]);

type Doc = { kind: string; metadata: { name: string }; [k: string]: unknown };
type Container = {
  env: { name: string; value?: string; valueFrom?: unknown }[];
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext: Record<string, unknown>;
  resources: unknown;
};
type PodSpec = {
  automountServiceAccountToken: boolean;
  serviceAccountName: string;
  containers: Container[];
  volumes: Record<string, unknown>[];
};

const helm = () => execFileSync('bash', [join(repoRoot, 'scripts', 'ensure-helm.sh')], { encoding: 'utf8' }).trim();
const template = (args: string[] = []) =>
  spawnSync(helm(), ['template', 'skewless', CHART, '--namespace', NAMESPACE, ...args], { encoding: 'utf8', timeout: 60_000 });
const docs = (args: string[] = []): Doc[] => {
  const r = template(args);
  assert.equal(r.status, 0, r.stderr);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Doc)
    .filter(Boolean);
};
const of = (all: Doc[], kind: string) => all.filter((d) => d.kind === kind);
const podSpec = (all: Doc[]) => (of(all, 'Deployment')[0] as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;

describe('deploy/helm/skewless-worker', () => {
  it('helm lint --strict finds nothing to warn about', () => {
    const r = spawnSync(helm(), ['lint', '--strict', CHART], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.doesNotMatch(r.stdout, /\[(WARNING|ERROR)\]/, r.stdout);
  });

  it('renders workers with replicas, a PDB, and a ServiceAccount with no token and no rights by default', () => {
    const all = docs();
    assert.deepEqual(all.map((d) => d.kind).sort(), ['Deployment', 'PodDisruptionBudget', 'ServiceAccount']);
    const deployment = of(all, 'Deployment')[0] as unknown as {
      spec: { replicas: number; template: { metadata: { labels: Record<string, string> } } };
    };
    assert.equal(deployment.spec.replicas, 2);
    const pdb = of(all, 'PodDisruptionBudget')[0] as unknown as {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    assert.equal(pdb.spec.minAvailable, 1);
    for (const [k, v] of Object.entries(pdb.spec.selector.matchLabels))
      assert.equal(deployment.spec.template.metadata.labels[k], v, `the PDB selects the workers (${k})`);
    const sa = of(all, 'ServiceAccount')[0] as unknown as { automountServiceAccountToken: boolean; metadata: { name: string } };
    assert.equal(sa.automountServiceAccountToken, false);
    const pod = podSpec(all);
    assert.equal(pod.serviceAccountName, sa.metadata.name);
    assert.equal(pod.automountServiceAccountToken, false);
    const [worker] = pod.containers;
    const mounts = Object.fromEntries(worker!.volumeMounts.map((m) => [m.name, m]));
    assert.deepEqual([mounts.clusters?.readOnly, mounts.credentials?.readOnly], [true, true], 'configurations and keys mounted read-only');
    assert.equal(worker!.securityContext.readOnlyRootFilesystem, true);
    assert.ok(worker!.resources, 'resources set');
    const env = Object.fromEntries(worker!.env.map((e) => [e.name, e.value]));
    assert.equal(env.SKEWLESS_CLUSTERS_DIR, mounts.clusters?.mountPath);
    assert.equal(env.TEMPORAL_ADDRESS, 'temporal-frontend.temporal:7233');
  });

  it('rights only when asked (a Role in its namespace); the API key from a Secret, never a value', () => {
    const all = docs(EVERYTHING);
    assert.deepEqual(of(all, 'Role').length + of(all, 'RoleBinding').length, 2);
    assert.equal(of(all, 'ClusterRole').length, 0);
    const env = podSpec(all).containers[0]!.env;
    const apiKey = env.find((e) => e.name === 'TEMPORAL_API_KEY');
    assert.deepEqual(apiKey, { name: 'TEMPORAL_API_KEY', valueFrom: { secretKeyRef: { name: 'temporal-api-key', key: 'api-key' } } });
    assert.ok(env.some((e) => e.name === 'TEMPORAL_TLS_CERT'));
  });

  it('refuses to render without a Temporal address, naming the value', () => {
    const r = template(['--set', 'temporal.address=']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /temporal\.address is required/);
  });

  describe("applied to the simulation's API server with a server-side dry run", () => {
    const tc = clusterWorld(DESCRIPTION);
    let kubectl: (args: string[]) => ReturnType<typeof spawnSync>;
    before(async () => {
      const bin = ensureSimBinaries().bin('kubectl');
      kubectl = (args) =>
        spawnSync(bin, ['--kubeconfig', tc.sim.endpoints.adminKubeconfig, ...args], { encoding: 'utf8', timeout: 60_000 });
      const ns = kubectl(['create', 'namespace', NAMESPACE]);
      assert.equal(ns.status, 0, String(ns.stderr));
    });
    const apply = (args: string[]) => {
      const file = join(tempDir('helm'), 'rendered.yaml');
      const r = template(args);
      assert.equal(r.status, 0, r.stderr);
      writeFileSync(file, r.stdout);
      return kubectl(['apply', '--dry-run=server', '--namespace', NAMESPACE, '-f', file]);
    };

    it('the API server accepts every object, with the defaults and with everything on', () => {
      for (const args of [[], EVERYTHING]) {
        const r = apply(args);
        assert.equal(r.status, 0, String(r.stderr));
        const created = String(r.stdout).trim().split('\n');
        assert.equal(created.length, docs(args).length, String(r.stdout));
        for (const line of created) assert.match(line, /created \(server dry run\)$/);
      }
      const nothing = kubectl(['get', 'deployments,pdb,serviceaccounts', '--namespace', NAMESPACE, '-o', 'name']);
      assert.deepEqual(String(nothing.stdout).trim().split('\n').filter(Boolean), ['serviceaccount/default'], 'a dry run creates nothing');
    });

    it('and refuses what it would refuse for real (a negative replica count)', () => {
      const r = apply(['--set', 'replicaCount=-1']);
      assert.notEqual(r.status, 0);
      assert.match(String(r.stderr), /spec\.replicas: Invalid value: -1/);
    });
  });
});
