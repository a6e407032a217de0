import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { checkSkew } from '../../rules/skew-policy.js';
import type { KubeClients } from '../../sim/cluster/kube-clients.js';
import { readVersionHistory, recordVersions } from '../../sim/cluster/version-recorder.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import type { ClusterEffects } from '../../sim/hosts/cluster-effects.js';
import { sshExec } from '../helpers/ssh-exec.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { tempDir } from '../helpers/temp-dir.js';

const DESCRIPTION = `
name: history
version: 1.32.4
repository: [1.32.4, 1.32.9, 1.33.7]
latencies: {kubeletRestart: 300}
nodes:
  - {name: cp, role: control-plane, count: 2}
  - {name: worker, role: worker, count: 1}
`;

const at = (version: string, ...nodes: string[]) => nodes.map((node) => ({ node, version }));

describe('the version history of a simulated cluster', () => {
  const tc = clusterWorld(DESCRIPTION);

  const history = async () => {
    await tc.sim.versionHistorySettled();
    return readVersionHistory(tc.sim.stateDir);
  };
  const ssh = async (node: string, command: string) => {
    const r = await sshExec(tc.sim.endpoints, node, command);
    assert.equal(r.code, 0, `${node}: ${command}\n${r.stdout}${r.stderr}`);
  };
  // As an operator does it: the node's one-minor repository pointed at the version's minor, then the package.
  const install = (node: string, pkg: string, v: string) =>
    ssh(
      node,
      `sudo sed -i 's,/core:/stable:/v[0-9.]*/,/core:/stable:/v${v.split('.').slice(0, 2).join('.')}/,g' /etc/apt/sources.list.d/kubernetes.list && sudo apt-get update -q && sudo apt-mark unhold ${pkg} && sudo apt-get install -y ${pkg}=${v}-1.1 && sudo apt-mark hold ${pkg}`,
    );

  it('starts with the initial state read through the API', async () => {
    assert.equal(tc.sim.versionHistoryPath, join(tc.sim.stateDir, 'version-history.jsonl'));
    const [initial, ...rest] = await history();
    assert.deepEqual(rest, []);
    assert.equal(initial?.cause, 'initial');
    assert.ok(!Number.isNaN(Date.parse(initial?.at ?? '')));
    assert.deepEqual(initial?.inventory, {
      apiservers: at('1.32.4', 'cp-1', 'cp-2'),
      controllerManagers: at('1.32.4', 'cp-1', 'cp-2'),
      schedulers: at('1.32.4', 'cp-1', 'cp-2'),
      kubelets: at('1.32.4', 'cp-1', 'cp-2', 'worker-1'),
      kubeProxies: at('1.32.4', 'cp-1', 'cp-2', 'worker-1'),
    });
  });

  it('records the state after a kubelet restart and after each kubeadm upgrade, in order', async () => {
    await install('worker-1', 'kubelet', '1.32.9');
    await ssh('worker-1', 'sudo systemctl daemon-reload && sudo systemctl restart kubelet');
    // The restart returns at once; the kubelet reports in (and the state is recorded) later.
    await waitFor('the kubelet line', async () => (await history()).length === 2, 20_000, 100);
    const kubelet = (await history())[1];
    assert.equal(kubelet?.cause, 'kubelet worker-1 1.32.9');
    assert.deepEqual(kubelet?.inventory.kubelets, [...at('1.32.4', 'cp-1', 'cp-2'), ...at('1.32.9', 'worker-1')]);

    await install('cp-1', 'kubeadm', '1.33.7');
    await ssh('cp-1', 'sudo kubeadm upgrade apply v1.33.7 --yes');
    await install('cp-2', 'kubeadm', '1.33.7');
    await ssh('cp-2', 'sudo kubeadm upgrade node');

    const lines = await history();
    assert.deepEqual(
      lines.map((l) => l.cause),
      ['initial', 'kubelet worker-1 1.32.9', 'control-plane cp-1 1.33.7', 'control-plane cp-2 1.33.7'],
    );
    const [, , apply, node] = lines;
    assert.deepEqual(apply?.inventory.apiservers, [...at('1.33.7', 'cp-1'), ...at('1.32.4', 'cp-2')]);
    assert.deepEqual(apply?.inventory.schedulers, [...at('1.33.7', 'cp-1'), ...at('1.32.4', 'cp-2')]);
    assert.deepEqual(apply?.inventory.kubeProxies, at('1.32.4', 'cp-1', 'cp-2', 'worker-1'), 'kube-proxy waits for the last control plane');
    assert.deepEqual(node?.inventory.controllerManagers, at('1.33.7', 'cp-1', 'cp-2'));
    assert.deepEqual(node?.inventory.kubeProxies, at('1.33.7', 'cp-1', 'cp-2', 'worker-1'));
    assert.ok(lines.every((l) => l.error === undefined));
    // Every state of this sequence is within the policy; the history is what the e2e tests judge.
    for (const l of lines) assert.ok(checkSkew(l.inventory, { topology: 'kubeadm' }).compliant, l.cause);
    assert.ok(
      lines.every((l, i) => i === 0 || (lines[i - 1]?.at ?? '') <= l.at),
      'in time order',
    );
  });
});

describe('recordVersions (the wrapper alone)', () => {
  let dir: string;
  before(() => {
    dir = tempDir('history');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('never fails an effect: a state it cannot read is a line with the error', async () => {
    const calls: string[] = [];
    const inner: ClusterEffects = {
      kubeletStopped: async (n) => void calls.push(`stopped ${n}`),
      kubeletStarted: async (n, v) => void calls.push(`started ${n} ${v}`),
      clusterVersion: async () => '1.32.4',
      controlPlaneVersions: async () => ({}),
      upgradeControlPlane: async (n, v) => void calls.push(`cp ${n} ${v}`),
    };
    const refused = () => Promise.reject(new Error('connect ECONNREFUSED'));
    const kube = {
      core: { listNode: refused, listNamespacedPod: refused },
      apps: { readNamespacedDaemonSet: refused },
    } as unknown as KubeClients;
    const recorder = recordVersions(inner, kube, dir);
    await recorder.effects.kubeletStopped('w1');
    await recorder.effects.kubeletStarted('w1', '1.33.7');
    await recorder.effects.upgradeControlPlane('cp1', '1.33.7', { recordClusterVersion: true });
    assert.deepEqual(calls, ['stopped w1', 'started w1 1.33.7', 'cp cp1 1.33.7']);
    const lines = readVersionHistory(dir);
    assert.deepEqual(
      lines.map((l) => [l.cause, l.error]),
      [
        ['kubelet w1 1.33.7', 'connect ECONNREFUSED'],
        ['control-plane cp1 1.33.7', 'connect ECONNREFUSED'],
      ],
    );
  });

  it('reads an empty history when nothing was recorded', () => {
    assert.deepEqual(readVersionHistory(join(dir, 'nowhere')), []);
  });
});
