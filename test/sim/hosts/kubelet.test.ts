import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hostSpec, run, startTestSim, tcpProbe } from './ssh-client.js';

const INSTALL_KUBELET = 'sudo -n apt-get install -y --allow-change-held-packages kubelet=1.33.7-1.1';

describe('the kubelet unit and reboots of a simulated host', () => {
  it('a restart after daemon-reload tells the cluster the installed kubelet version', async (t) => {
    const { sim, effects } = await startTestSim(t);
    const r = await run(sim, 'w-1', `${INSTALL_KUBELET} && sudo systemctl daemon-reload && sudo systemctl restart kubelet`);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /daemon-reload/);
    await effects.waitFor('kubeletStarted', () => effects.kubelets.get('w-1') === '1.33.7');
    assert.deepEqual(
      effects.calls.map((c) => [c.method, ...c.args]),
      [
        ['kubeletStopped', 'w-1'],
        ['kubeletStarted', 'w-1', '1.33.7'],
      ],
    );
    await effects.waitFor('state', () => sim.state('w-1').kubelet.version === '1.33.7');
    assert.equal((await run(sim, 'w-1', 'kubelet --version')).stdout, 'Kubernetes v1.33.7\n');
  });

  it('without daemon-reload systemd warns about the changed unit, and still restarts', async (t) => {
    const { sim, effects } = await startTestSim(t);
    const r = await run(sim, 'w-1', `${INSTALL_KUBELET} && sudo systemctl restart kubelet`);
    assert.equal(r.code, 0);
    assert.equal(
      r.stderr,
      "Warning: The unit file, source configuration file or drop-ins of kubelet.service changed on disk. Run 'systemctl daemon-reload' to reload units.\n",
    );
    await effects.waitFor('kubeletStarted', () => effects.kubelets.get('w-1') === '1.33.7');
    const again = await run(sim, 'w-1', 'sudo systemctl daemon-reload; sudo systemctl restart kubelet');
    assert.equal(again.stderr, '', 'no warning once reloaded');
  });

  it('the restart returns at once; the node reports the kubelet only after the restart latency', async (t) => {
    const { sim, effects } = await startTestSim(t, { hosts: [hostSpec('w-1', 'worker', { latencies: { kubeletRestart: 1000 } })] });
    const started = Date.now();
    const r = await run(sim, 'w-1', 'sudo systemctl restart kubelet && systemctl is-active kubelet');
    assert.equal(r.code, 0);
    assert.equal(r.stdout, 'active\n');
    assert.equal(effects.kubelets.get('w-1'), null, 'stopped, not yet started');
    await effects.waitFor('kubeletStarted', () => effects.kubelets.get('w-1') === '1.32.4');
    assert.ok(Date.now() - started >= 1000, `started after ${Date.now() - started} ms`);
    assert.equal((await run(sim, 'w-1', 'systemctl restart kubelet')).code, 1, 'needs root');
  });

  it('reboot drops the session, refuses connections while down, then boots the installed kubelet', async (t) => {
    const { sim, effects } = await startTestSim(t, { hosts: [hostSpec('w-1', 'worker', { latencies: { reboot: 1000 } })] });
    const port = sim.hosts[0]!.port;
    await run(sim, 'w-1', INSTALL_KUBELET);
    const r = await run(sim, 'w-1', 'sudo reboot');
    assert.equal(r.code, null, 'no exit status: the connection went away');
    assert.equal(await tcpProbe(port), 'ECONNREFUSED');
    assert.deepEqual(effects.callsOf('kubeletStopped'), [['w-1']]);
    await effects.waitFor('kubeletStarted', () => effects.kubelets.get('w-1') === '1.33.7');
    assert.equal(await tcpProbe(port), 'connected');
    const after = await run(sim, 'w-1', 'systemctl is-active kubelet && sudo systemctl restart kubelet');
    assert.equal(after.code, 0);
    assert.equal(after.stderr, '', 'a boot loads the new unit file: no daemon-reload warning');
    assert.equal(sim.commandLog('w-1').find((e) => e.command === 'sudo reboot')?.exitCode, 0);
  });
});
