import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RehearsalFacts } from '../../activities/rehearsal.js';
import { DEFAULT_LATENCIES, descriptionYaml, twinDescription, TwinInputError } from '../../client/rehearse/twin-description.js';
import { parseDescription } from '../../sim/description.js';

const cp = (name: string, v = '1.33.7') => ({
  name,
  role: 'control-plane' as const,
  kubelet: v,
  components: { apiserver: v, controllerManager: v, scheduler: v },
  labels: { 'node-role.kubernetes.io/control-plane': '', 'kubernetes.io/hostname': name, zone: 'a' },
});
const worker = (name: string, v = '1.33.7', labels: Record<string, string> = {}) => ({
  name,
  role: 'worker' as const,
  kubelet: v,
  labels: { 'kubernetes.io/os': 'linux', ...labels },
});

function facts(over: Partial<RehearsalFacts> = {}): RehearsalFacts {
  return {
    cluster: 'prod',
    clusterVersion: '1.33.7',
    nodes: [cp('cp-1'), worker('w-1'), worker('w-2', '1.32.4', { pool: 'blue' })],
    workloads: [
      { kind: 'Deployment', namespace: 'shop', name: 'web', replicas: 3, emptyDir: false },
      { kind: 'StatefulSet', namespace: 'shop', name: 'db', replicas: 2, emptyDir: true },
      { kind: 'DaemonSet', namespace: 'kube-system', name: 'kube-proxy', replicas: 3, emptyDir: false },
      { kind: 'DaemonSet', namespace: 'monitoring', name: 'agent', replicas: 2, emptyDir: false },
    ],
    pdbs: [
      { namespace: 'shop', name: 'web-budget', minAvailable: 3, covers: ['Deployment/web'], pods: 3 },
      { namespace: 'shop', name: 'db-pdb', maxUnavailable: 1, covers: ['StatefulSet/db'], pods: 2 },
      { namespace: 'shop', name: 'orphan', maxUnavailable: 0, covers: [], pods: 1 },
    ],
    barePods: [{ namespace: 'shop', name: 'debug', node: 'w-1', emptyDir: false }],
    otherPods: { Job: 2 },
    problems: [],
    ...over,
  };
}

describe('rehearse: the twin description from the facts read (pure)', () => {
  it('keeps nodes, roles, versions and labels (less what the simulation sets), and gives every host the repository and latencies', () => {
    const { description: d, names } = twinDescription(
      'prod',
      { facts: facts(), repository: { node: 'cp-1', versions: ['1.33.7', '1.34.2'] } },
      { latencies: { kubeadmApply: 100 } },
    );
    assert.equal(d.name, 'prod');
    assert.equal(d.version, '1.33.7');
    assert.deepEqual(
      d.nodes.map((n) => [n.name, n.role, n.kubelet]),
      [
        ['cp-1', 'control-plane', '1.33.7'],
        ['w-1', 'worker', '1.33.7'],
        ['w-2', 'worker', '1.32.4'],
      ],
    );
    assert.deepEqual(d.nodes[0]?.components, { apiserver: '1.33.7', controllerManager: '1.33.7', scheduler: '1.33.7' });
    assert.deepEqual(d.nodes[0]?.labels, { zone: 'a' });
    assert.deepEqual(d.nodes[2]?.labels, { pool: 'blue' });
    assert.deepEqual(d.nodes[1]?.repository, ['1.33.7', '1.34.2']);
    assert.deepEqual(d.nodes[1]?.latencies, { ...DEFAULT_LATENCIES, kubeadmApply: 100 });
    assert.deepEqual(names.nodes, { 'cp-1': 'cp-1', 'w-1': 'w-1', 'w-2': 'w-2' });
    assert.equal(d.packageManager, 'apt', 'apt unless the facts say otherwise');
    const rhel = twinDescription('prod', { facts: facts({ packageManager: 'dnf' }) }, { repository: ['1.33.7'] }).description;
    assert.equal(
      rhel.packageManager,
      'dnf',
      "a dnf cluster's twin has dnf hosts (kubernetes.repo), so the rehearsal meets its repository switch",
    );
    assert.match(descriptionYaml(rhel), /^packageManager: dnf$/m);
  });

  it('puts each PDB on the workload it covers, named after the workload, and maps it back; leaves out kube-proxy (the simulation runs its own)', () => {
    const { description: d, names, notModelled } = twinDescription('prod', { facts: facts() }, { repository: ['1.33.7', '1.34.2'] });
    const byName = Object.fromEntries(d.workloads.map((w) => [`${w.namespace}/${w.name}`, w]));
    assert.deepEqual(Object.keys(byName).sort(), ['monitoring/agent', 'shop/db', 'shop/debug', 'shop/web']);
    assert.deepEqual(byName['shop/web'], { kind: 'Deployment', name: 'web', namespace: 'shop', replicas: 3, pdb: { minAvailable: 3 } });
    assert.deepEqual(byName['shop/db'], {
      kind: 'StatefulSet',
      name: 'db',
      namespace: 'shop',
      replicas: 2,
      emptyDir: true,
      pdb: { maxUnavailable: 1 },
    });
    assert.deepEqual(byName['shop/debug'], { kind: 'Pod', name: 'debug', namespace: 'shop', replicas: 1, node: 'w-1' });
    assert.deepEqual(names.pdbs, { 'shop/web': 'shop/web-budget', 'shop/db': 'shop/db-pdb' });
    assert.ok(
      notModelled.some((m) => /PDB shop\/orphan covers no Deployment/.test(m)),
      notModelled.join('\n'),
    );
    assert.ok(
      notModelled.some((m) => /2 pod\(s\) managed by a Job/.test(m)),
      notModelled.join('\n'),
    );
  });

  it('renames what the simulation cannot take (dots, capitals) to unique DNS labels and maps the names back', () => {
    const f = facts({
      nodes: [cp('ip-10-0-0-1.ec2.internal'), worker('ip-10-0-0-2.ec2.internal'), worker('ip-10-0-0-2-ec2-internal')],
      barePods: [{ namespace: 'shop', name: 'debug.v2', node: 'ip-10-0-0-2.ec2.internal', emptyDir: true }],
    });
    const { description: d, names } = twinDescription('prod', { facts: f }, { repository: ['1.33.7'] });
    assert.deepEqual(
      d.nodes.map((n) => n.name),
      ['ip-10-0-0-1-ec2-internal', 'ip-10-0-0-2-ec2-internal', 'ip-10-0-0-2-ec2-internal-2'],
    );
    assert.equal(names.nodes['ip-10-0-0-2-ec2-internal'], 'ip-10-0-0-2.ec2.internal');
    assert.equal(names.nodes['ip-10-0-0-2-ec2-internal-2'], 'ip-10-0-0-2-ec2-internal');
    const pod = d.workloads.find((w) => w.kind === 'Pod');
    assert.deepEqual(pod, {
      kind: 'Pod',
      name: 'debug-v2',
      namespace: 'shop',
      replicas: 1,
      node: 'ip-10-0-0-2-ec2-internal',
      emptyDir: true,
    });
    assert.equal(names.workloads['shop/debug-v2'], 'shop/debug.v2');
  });

  it('writes YAML the simulation reads back to the same description', () => {
    const { description } = twinDescription(
      'prod',
      { facts: facts() },
      { repository: ['1.33.7', '1.34.2'], sshUser: 'ops', rebootSeconds: 7 },
    );
    const back = parseDescription(descriptionYaml(description));
    assert.deepEqual(back, description);
  });

  it("falls back to the oldest apiserver without kubeadm's record, and fills unknown component versions, saying so", () => {
    const node = { ...cp('cp-1', '1.33.7'), components: { apiserver: '1.33.7' } };
    const { description: d, notModelled } = twinDescription(
      'prod',
      { facts: facts({ clusterVersion: undefined, nodes: [node, { ...cp('cp-2', '1.32.9') }] }) },
      { repository: ['1.33.7'] },
    );
    assert.equal(d.version, '1.32.9');
    assert.deepEqual(d.nodes[0]?.components, { apiserver: '1.33.7', controllerManager: '1.32.9', scheduler: '1.32.9' });
    assert.ok(notModelled.some((m) => /cp-1: no version read for controllerManager, scheduler/.test(m)));
  });

  it('refuses what it cannot model: no repository, no version at all, a kubelet version that is none', () => {
    assert.throws(
      () => twinDescription('prod', { facts: facts() }),
      (e: Error) => e instanceof TwinInputError && /--repository/.test(e.message),
    );
    assert.throws(
      () => twinDescription('prod', { facts: facts({ clusterVersion: undefined, nodes: [worker('w-1')] }) }, { repository: ['1.33.7'] }),
      /nothing to model/,
    );
    assert.throws(
      () => twinDescription('prod', { facts: facts({ nodes: [cp('cp-1'), worker('w-1', 'v1.33-custom')] }) }, { repository: ['1.33.7'] }),
      /w-1 reports kubelet version "v1.33-custom"/,
    );
  });
});
