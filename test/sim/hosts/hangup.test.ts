import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CommandEvent } from '../../../sim/hosts/command-runner.js';
import { connect, exec, hostSpec, run, startTestSim } from './ssh-client.js';

const INSTALL = 'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-change-held-packages';
const slowApt = { hosts: [hostSpec('w-1', 'worker', { latencies: { aptInstall: 600 } })] };

/** Starts `command` on a fresh connection and drops the connection `afterMs` later, as a killed worker does. */
async function hangUpDuring(sim: Parameters<typeof connect>[0], command: string, afterMs: number): Promise<void> {
  const client = await connect(sim, 'w-1');
  const running = exec(client, command).catch(() => undefined);
  await new Promise((r) => setTimeout(r, afterMs));
  client.destroy();
  await running;
}

const waitFor = async (what: string, check: () => boolean): Promise<void> => {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('a client that goes away mid-command, and who watches commands', () => {
  it('observers see each command start and end, with its status', async (t) => {
    const { sim } = await startTestSim(t);
    const events: CommandEvent[] = [];
    const off = sim.onCommand((e) => events.push(e));
    await run(sim, 'w-1', 'kubelet --version');
    await run(sim, 'w-1', 'false');
    off();
    await run(sim, 'w-1', 'true');
    assert.deepEqual(
      events.map((e) => [e.phase, e.host, e.command, e.phase === 'end' ? e.exitCode : '']),
      [
        ['start', 'w-1', 'kubelet --version', ''],
        ['end', 'w-1', 'kubelet --version', 0],
        ['start', 'w-1', 'false', ''],
        ['end', 'w-1', 'false', 1],
      ],
    );
  });

  it('by default the command dies with its session, before its effect: nothing installed, logged as cut short', async (t) => {
    const { sim } = await startTestSim(t, slowApt);
    await hangUpDuring(sim, `${INSTALL} kubeadm=1.33.7-1.1`, 250);
    await waitFor('the log entry', () => sim.commandLog('w-1').length === 1);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(sim.state('w-1').packages.kubeadm, '1.32.4-1.1');
    assert.deepEqual(
      sim.commandLog('w-1').map((e) => [e.exitCode, e.hungUp]),
      [[null, true]],
    );
  });

  it('under the "finishes" policy the command completes on the host, its status logged though no client heard it', async (t) => {
    const { sim } = await startTestSim(t, slowApt);
    const fates: string[] = [];
    sim.setHangupPolicy((host, command) => (fates.push(`${host} ${command}`), 'finishes'));
    await hangUpDuring(sim, `${INSTALL} kubeadm=1.33.7-1.1`, 250);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.32.4-1.1', 'still installing when the client left');
    await waitFor('the install to finish', () => sim.commandLog('w-1').length === 1);
    assert.equal(sim.state('w-1').packages.kubeadm, '1.33.7-1.1');
    assert.deepEqual(
      sim.commandLog('w-1').map((e) => [e.exitCode, e.hungUp]),
      [[0, true]],
    );
    assert.deepEqual(fates, [`w-1 ${INSTALL} kubeadm=1.33.7-1.1`]);
  });

  it('pgrep lists what runs on the host, a command its client left included, and exits 1 once it is gone', async (t) => {
    const { sim } = await startTestSim(t, slowApt);
    sim.setHangupPolicy(() => 'finishes');
    await hangUpDuring(sim, `${INSTALL} kubeadm=1.33.7-1.1`, 100);
    const during = await run(sim, 'w-1', "pgrep -a -x 'apt-get|dpkg'");
    assert.equal(during.code, 0);
    assert.match(during.stdout, /^\d+ apt-get install -y --allow-change-held-packages kubeadm=1\.33\.7-1\.1\n$/);
    assert.equal((await run(sim, 'w-1', 'pgrep -x apt')).code, 1, '-x matches the whole name');
    await waitFor('the install to finish', () => sim.commandLog('w-1').length >= 3);
    const after = await run(sim, 'w-1', "pgrep -a -x 'apt-get|dpkg'");
    assert.deepEqual([after.code, after.stdout], [1, '']);
    assert.equal((await run(sim, 'w-1', 'pgrep')).code, 2);
  });

  it('apt waits up to DPkg::Lock::Timeout for the dpkg lock an install left running still holds', async (t) => {
    const { sim } = await startTestSim(t, slowApt);
    sim.setHangupPolicy(() => 'finishes');
    await hangUpDuring(sim, `${INSTALL} kubeadm=1.33.7-1.1`, 100);
    const started = Date.now();
    const retry = await run(sim, 'w-1', `${INSTALL} -o DPkg::Lock::Timeout=10 kubeadm=1.33.7-1.1`);
    assert.equal(retry.code, 0, retry.stderr);
    assert.match(retry.stderr, /^Waiting for cache lock: Could not get lock \/var\/lib\/dpkg\/lock-frontend/);
    assert.match(retry.stdout, /kubeadm is already the newest version \(1\.33\.7-1\.1\)/);
    assert.ok(Date.now() - started >= 300, `waited ${Date.now() - started} ms`);
  });
});
