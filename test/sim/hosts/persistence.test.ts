import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FakeEffects } from './fake-effects.js';
import { hostSpec, run, startTestSim, tempStateDir } from './ssh-client.js';

describe('a simulator restarted on the same state dir', () => {
  it('keeps ports, host keys, packages, holds, kubelet and the command log', async (t) => {
    const stateDir = tempStateDir();
    const first = await startTestSim(t, { stateDir });
    const r = await run(
      first.sim,
      'w-1',
      'sudo apt-mark unhold kubelet && sudo apt-get install -y --allow-change-held-packages kubeadm=1.33.7-1.1 kubelet=1.33.7-1.1 && sudo systemctl daemon-reload && sudo systemctl restart kubelet',
    );
    assert.equal(r.code, 0, r.stderr);
    await first.effects.waitFor('kubeletStarted', () => first.effects.kubelets.get('w-1') === '1.33.7');
    await first.effects.waitFor('state', () => first.sim.state('w-1').kubelet.version === '1.33.7');
    const hosts = first.sim.hosts.map((h) => ({ ...h, hostKeyFingerprint: h.hostKeyFingerprint }));
    const knownHosts = readFileSync(first.sim.knownHostsPath, 'utf8');
    await first.sim.stop();

    // The seeds differ on purpose: a known host's state comes from disk, not from the options.
    const effects = new FakeEffects('1.32.4', ['cp-1']);
    const second = await startTestSim(t, {
      stateDir,
      effects,
      hosts: [
        hostSpec('cp-1', 'control-plane'),
        hostSpec('w-1', 'worker', { installed: { kubeadm: '1.30.0', kubelet: '1.30.0', kubectl: '1.30.0' } }),
        hostSpec('w-2', 'worker'),
      ],
    });
    for (const h of hosts) {
      const now = second.sim.hosts.find((x) => x.name === h.name)!;
      assert.equal(now.port, h.port, `${h.name} keeps its port`);
      assert.equal(now.hostKeyFingerprint, h.hostKeyFingerprint, `${h.name} keeps its host key`);
    }
    const knownNow = readFileSync(second.sim.knownHostsPath, 'utf8').split('\n');
    for (const line of knownHosts.trimEnd().split('\n')) assert.ok(knownNow.includes(line), `known_hosts keeps ${line}`);
    assert.equal(knownNow.filter((l) => l !== '').length, 3, 'plus a line for the new host');
    const state = second.sim.state('w-1');
    assert.deepEqual(state.packages, { kubeadm: '1.33.7-1.1', kubelet: '1.33.7-1.1', kubectl: '1.32.4-1.1' });
    assert.deepEqual(state.holds, ['kubeadm', 'kubectl']);
    assert.deepEqual(state.kubelet, { active: true, version: '1.33.7', startingVersion: null, unitPackage: '1.33.7-1.1' });
    assert.equal((await run(second.sim, 'w-1', 'kubeadm version -o short')).stdout, 'v1.33.7\n', 'a strict client still connects');
    assert.deepEqual(effects.calls, [], 'a running kubelet is not restarted by a simulator restart');

    const log = second.sim.commandLog('w-1');
    assert.equal(log.length, 2);
    assert.match(log[0]!.command, /^sudo apt-mark unhold kubelet && /);
    assert.deepEqual([log[0]!.exitCode, log[1]!.command, log[1]!.exitCode], [0, 'kubeadm version -o short', 0]);
    assert.ok(Number.isFinite(Date.parse(log[0]!.time)) && log[0]!.durationMs >= 0);
    const raw = readFileSync(join(stateDir, 'hosts', 'w-1', 'commands.log'), 'utf8')
      .trimEnd()
      .split('\n');
    assert.deepEqual(
      raw.map((l) => JSON.parse(l) as unknown),
      log,
      'one JSON line per command',
    );

    const newHost = second.sim.hosts.find((h) => h.name === 'w-2')!;
    assert.ok(!hosts.some((h) => h.port === newHost.port));
    assert.equal((await run(second.sim, 'w-2', 'hostname')).stdout, 'w-2\n');
  });

  it('finishes a kubelet start that the previous process left pending', async (t) => {
    const stateDir = tempStateDir();
    const first = await startTestSim(t, { stateDir, hosts: [hostSpec('w-1', 'worker', { latencies: { kubeletRestart: 60_000 } })] });
    assert.equal((await run(first.sim, 'w-1', 'sudo systemctl restart kubelet')).code, 0);
    assert.equal(first.sim.state('w-1').kubelet.startingVersion, '1.32.4');
    await first.sim.stop();
    assert.deepEqual(first.effects.callsOf('kubeletStarted'), []);

    const effects = new FakeEffects('1.32.4');
    const second = await startTestSim(t, { stateDir, effects, hosts: [hostSpec('w-1', 'worker')] });
    await effects.waitFor('kubeletStarted', () => effects.kubelets.get('w-1') === '1.32.4');
    await effects.waitFor('state', () => second.sim.state('w-1').kubelet.startingVersion === null);
  });

  it('writes state.json atomically: only complete JSON, never a temp file left behind', async (t) => {
    const { sim, stateDir } = await startTestSim(t);
    await run(sim, 'w-1', 'sudo apt-mark unhold kubeadm; sudo apt-mark hold kubeadm; sudo apt-mark unhold kubeadm');
    const dir = join(stateDir, 'hosts', 'w-1');
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).holds, ['kubelet', 'kubectl']);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.includes('.tmp')),
      [],
    );
  });
});
