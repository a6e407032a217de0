import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { createClusterResolver } from '../../activities/host-address.js';
import type { ClusterResolver } from '../../activities/cluster-access.js';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { createMaintenanceActivities } from '../../activities/maintenance.js';
import { clusterWorld } from '../helpers/sim-world.js';

// Two pools; worker-2 (blue) runs a bare pod and a pod of a DaemonSet; worker-3 (green) nothing of note.
const DESCRIPTION = `
name: mact
version: 1.33.7
repository: [1.33.7, 1.34.2]
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker-1, role: worker, labels: {pool: blue}}
  - {name: worker-2, role: worker, labels: {pool: blue}}
  - {name: worker-3, role: worker, labels: {pool: green}}
workloads:
  - {kind: DaemonSet, name: agent}
  - {kind: Deployment, name: web, replicas: 2}
  - {kind: Pod, name: pet, node: worker-2}
`;

describe('maintenance activities against the simulated cluster and hosts', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createMaintenanceActivities>;
  let withCommand: ClusterResolver;
  before(async () => {
    const resolve = createClusterResolver(tc.clustersDir);
    acts = createMaintenanceActivities({ clusters: resolve });
    // The same cluster with a maintenance command.
    withCommand = (name) => ({
      ...resolve(name),
      config: {
        ...resolve(name).config,
        maintenance: parseClusterConfig(
          'name: mact\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\nmaintenance: {command: [apt-get, -y, dist-upgrade], timeoutSeconds: 60}\n',
          'x.yaml',
        ).maintenance,
      },
    });
  });

  it('selects by label selector or by name, reports unknown names, and finds the bare pod (not the DaemonSet pod)', async () => {
    const blue = await acts.planMaintenance({ cluster: 'mact', selector: 'pool=blue' });
    assert.deepEqual(
      blue.nodes.map((n) => [n.name, n.role, n.ready]),
      [
        ['worker-1', 'worker', true],
        ['worker-2', 'worker', true],
      ],
    );
    assert.deepEqual(blue.unmanaged, [{ namespace: 'default', name: 'pet', node: 'worker-2' }]);
    assert.equal(blue.hasCommand, false, 'the simulation writes no maintenance.command');
    const named = await acts.planMaintenance({ cluster: 'mact', nodes: ['worker-3', 'cp-1', 'nope'] });
    assert.deepEqual(
      named.nodes.map((n) => [n.name, n.role]),
      [
        ['cp-1', 'control-plane'],
        ['worker-3', 'worker'],
      ],
    );
    assert.deepEqual(named.missing, ['nope']);
    assert.deepEqual(named.unmanaged, []);
    const forced = await acts.planMaintenance({ cluster: 'mact', selector: 'pool in (blue)', force: ['default/pet'] });
    assert.deepEqual(forced.unmanaged, []);
    assert.deepEqual(forced.forced, ['default/pet']);
    assert.deepEqual((await acts.planMaintenance({ cluster: 'mact', selector: 'pool=red' })).nodes, []);
  });

  it('refuses a malformed selector (the API says why) and both or neither of selector and names', async () => {
    await assert.rejects(
      acts.planMaintenance({ cluster: 'mact', selector: 'pool==blue==' }),
      (err: Error & { type?: string }) => err.type === 'Invalid',
    );
    await assert.rejects(acts.planMaintenance({ cluster: 'mact' }), /not both and not neither/);
    await assert.rejects(acts.planMaintenance({ cluster: 'mact', selector: 'a=b', nodes: ['worker-1'] }), /not both and not neither/);
  });

  it('runs the configured command through sudo, each word quoted; without one it refuses', async () => {
    await assert.rejects(acts.runMaintenanceCommand({ cluster: 'mact', node: 'worker-1' }), /has no maintenance\.command/);
    const run = createMaintenanceActivities({ clusters: withCommand });
    const r = await run.runMaintenanceCommand({ cluster: 'mact', node: 'worker-1' });
    assert.equal(r.node, 'worker-1');
    const log = tc.sim.hosts.commandLog('worker-1').map((e) => e.command);
    assert.ok(log.includes('sudo -n apt-get -y dist-upgrade'), log.join(' | '));
  });
});
