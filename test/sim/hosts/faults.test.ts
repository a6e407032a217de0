import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connect, exec, hostSpec, run, startTestSim, tcpProbe } from './ssh-client.js';

const INSTALL = 'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-change-held-packages kubeadm=1.33.7-1.1';

describe('faults injected into a simulated host, seen by an SSH client', () => {
  it('fail: the next N matching commands fail with the given code and stderr, then they succeed', async (t) => {
    const { sim } = await startTestSim(t, {
      hosts: [
        hostSpec('w-1', 'worker', {
          faults: [
            {
              kind: 'fail',
              command: 'apt-get install',
              times: 2,
              exitCode: 100,
              stderr: 'E: Failed to fetch kubeadm_1.33.7-1.1_amd64.deb  Connection timed out',
            },
          ],
        }),
      ],
    });
    assert.equal((await run(sim, 'w-1', 'sudo apt-get update')).code, 0, 'a command that does not match is unaffected');
    for (let i = 0; i < 2; i++) {
      const r = await run(sim, 'w-1', `${INSTALL} && echo done`);
      assert.deepEqual(
        [r.code, r.stdout, r.stderr],
        [100, '', 'E: Failed to fetch kubeadm_1.33.7-1.1_amd64.deb  Connection timed out\n'],
        `run ${i + 1}`,
      );
      assert.equal(sim.state('w-1').packages.kubeadm, '1.32.4-1.1');
    }
    const r = await run(sim, 'w-1', `${INSTALL} && echo done`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /done\n$/);
    assert.deepEqual(
      sim.commandLog('w-1').map((e) => e.exitCode),
      [0, 100, 100, 0],
    );

    sim.setFault('w-1', { kind: 'fail', command: 'kubeadm version' });
    assert.equal((await run(sim, 'w-1', 'kubeadm version -o short')).code, 1, 'default: once, exit 1');
    assert.equal((await run(sim, 'w-1', 'kubeadm version -o short')).code, 0);
  });

  it('a command fault that can never match is refused in one line; the active ones are listed with the runs they have left', async (t) => {
    const { sim } = await startTestSim(t, { hosts: [hostSpec('w-1', 'worker')] });
    for (const [command, program] of [
      ['apt update', 'apt'],
      ['sudo -n dnf makecache', 'dnf'],
    ]) {
      assert.throws(
        () => sim.setFault('w-1', { kind: 'fail', command: command! }),
        (err: Error) =>
          err.message ===
          `sim: fault fail: command ${JSON.stringify(command)} can never match: the host has no program '${program}' (commands.log shows what it runs)`,
      );
    }
    // A verb the program never carries out: the host answers "invalid operation" before running anything.
    for (const [command, program, verb] of [
      ['apt-get instal', 'apt-get', 'instal'],
      ['sudo -n apt-mark remove kubelet', 'apt-mark', 'remove'],
      ['systemctl reload kubelet', 'systemctl', 'reload'],
    ]) {
      assert.throws(
        () => sim.setFault('w-1', { kind: 'fail', command: command! }),
        (err: Error) =>
          err.message.startsWith(
            `sim: fault fail: command ${JSON.stringify(command)} can never match: ${program} has no operation '${verb}' here (it carries out `,
          ),
      );
    }
    // As `sim fault` arms them (sentBySkewless): a command the host has but skewless never sends is refused
    // too (rules/host-command-forms.ts), a configured one (maintenance.command) and the product's own are not.
    for (const command of ['apt-get -q', 'kubeadm version', 'sudo -n apt-mark showhold kubelet', 'hostname']) {
      assert.throws(
        () => sim.setFault('w-1', { kind: 'fail', command }, { sentBySkewless: [] }),
        (err: Error) =>
          err.message ===
          `sim: fault fail: command ${JSON.stringify(command)} can never match: skewless sends no command that starts with '${command.replace('sudo -n ', '')}' (rules/host-command-forms.ts lists what it sends)`,
      );
    }
    assert.throws(
      () => sim.setFault('w-1', { kind: 'fail', command: 'apt update' }, { sentBySkewless: [] }),
      /the host has no program 'apt'/,
      "the host's own refusal comes first",
    );
    sim.setFault('w-1', { kind: 'fail', command: 'apt-get -y dist-upgrade' }, { sentBySkewless: [['apt-get', '-y', 'dist-upgrade']] });
    sim.setFault('w-1', { kind: 'fail', command: 'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y' }, { sentBySkewless: [] });
    assert.equal(sim.activeFaults('w-1').length, 2);
    sim.clearFaults('w-1');
    assert.deepEqual(sim.activeFaults('w-1'), [], 'nothing refused is armed');
    // A pattern that starts with options names no verb: taken as it is, and it matches.
    sim.setFault('w-1', { kind: 'fail', command: 'apt-get -q', stderr: 'boom' });
    assert.equal((await run(sim, 'w-1', 'sudo apt-get -q update')).code, 1);
    sim.setFault('w-1', { kind: 'fail', command: 'apt-get update', times: 2 });
    sim.setFault('w-1', { kind: 'slow', command: '/usr/bin/kubeadm', ms: 10 });
    await run(sim, 'w-1', 'sudo apt-get update');
    assert.deepEqual(sim.activeFaults('w-1'), [
      { fault: { kind: 'fail', command: 'apt-get update', times: 2 }, remaining: 1 },
      { fault: { kind: 'slow', command: '/usr/bin/kubeadm', ms: 10 }, remaining: null },
    ]);
    sim.clearFaults('w-1');
    assert.deepEqual(sim.activeFaults('w-1'), []);
  });

  it('refuse: connections are refused (ECONNREFUSED) and open ones dropped for T seconds, then accepted on the same port', async (t) => {
    const { sim } = await startTestSim(t);
    const { port } = sim.hosts.find((h) => h.name === 'w-1')!;
    const open = await connect(sim, 'w-1');
    const dropped = new Promise<void>((resolve) => open.once('close', () => resolve()));
    const started = Date.now();
    sim.setFault('w-1', { kind: 'refuse', seconds: 0.8 });
    await dropped;
    assert.equal(await tcpProbe(port), 'ECONNREFUSED');
    await assert.rejects(connect(sim, 'w-1'), (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED');
    assert.equal((await run(sim, 'cp-1', 'true')).code, 0, 'other hosts are unaffected');
    while ((await tcpProbe(port)) !== 'connected') {
      assert.ok(Date.now() - started < 5000, 'still refused after 5 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(Date.now() - started >= 750, `refused for only ${Date.now() - started} ms`);
    assert.equal((await run(sim, 'w-1', 'hostname')).stdout, 'w-1\n');

    sim.setFault('w-1', { kind: 'refuse', seconds: 60 });
    assert.equal(await tcpProbe(port), 'ECONNREFUSED');
    sim.clearFaults('w-1');
    assert.equal((await run(sim, 'w-1', 'true')).code, 0, 'clearFaults ends a refusal early');
  });

  it('hang: a matching command never exits until the client closes the channel', async (t) => {
    const { sim, effects } = await startTestSim(t);
    sim.setFault('cp-1', { kind: 'hang', command: 'kubeadm upgrade' });
    const client = await connect(sim, 'cp-1');
    await assert.rejects(exec(client, `${INSTALL} && sudo kubeadm upgrade apply v1.33.7 --yes`, 600), /did not finish within 600 ms/);
    assert.equal((await exec(client, 'echo still here')).stdout, 'still here\n', 'the connection stays usable');
    client.end();
    await effects.waitFor('the hung command in the log', () =>
      sim.commandLog('cp-1').some((e) => e.command.includes('upgrade apply') && e.exitCode === null),
    );
    assert.deepEqual(effects.callsOf('upgradeControlPlane'), []);
    sim.clearFaults('cp-1');
    assert.equal((await run(sim, 'cp-1', 'sudo kubeadm upgrade apply v1.33.7 --yes')).code, 0);
  });

  it('slow: matching commands take measurably longer', async (t) => {
    const { sim } = await startTestSim(t);
    const client = await connect(sim, 'w-1'); // one connection: the timings exclude the SSH handshake
    t.after(() => client.end());
    const timed = async (command: string): Promise<number> => {
      const started = Date.now();
      assert.equal((await exec(client, command)).code, 0);
      return Date.now() - started;
    };
    const logged = (): number => sim.commandLog('w-1').at(-1)?.durationMs ?? -1;
    await timed('kubelet --version');
    const baseline = logged();
    sim.setFault('w-1', { kind: 'slow', command: 'kubelet', ms: 500 });
    assert.ok((await timed('kubelet --version')) >= 500, 'the client waits for the delay');
    // The host's own durations compare without network noise (this machine may be busy). Its timer may
    // fire a millisecond before the wall clock says 500 ms have passed (a run logged 499 ms).
    assert.ok(logged() >= 490 && logged() >= baseline + 450, `baseline ${baseline} ms, slow ${logged()} ms`);
    await timed('hostname');
    assert.ok(logged() < 450, `other commands are not slowed (${logged()} ms)`);
  });
});
