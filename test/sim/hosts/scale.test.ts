import assert from 'node:assert/strict';
import { connect as tcpConnect } from 'node:net';
import { describe, it } from 'node:test';
import { startHostSimulator, type HostSimulator } from '../../../sim/hosts/host-simulator.js';
import { FakeEffects } from './fake-effects.js';
import { hostSpec, run, tempStateDir } from './ssh-client.js';

const COUNT = 1000;

/** The SSH identification line a host sends first, proving the ssh2 server behind the port answers. */
function banner(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    let text = '';
    socket.setTimeout(5000, () => socket.destroy(new Error(`no banner from ${port}`)));
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (text.includes('\r\n')) {
        socket.destroy();
        resolve(text.slice(0, text.indexOf('\r\n')));
      }
    });
    socket.on('error', reject);
  });
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

async function checkAll(t: { diagnostic(msg: string): void }, sim: HostSimulator): Promise<void> {
  assert.equal(sim.hosts.length, COUNT);
  assert.equal(new Set(sim.hosts.map((h) => h.port)).size, COUNT, 'distinct ports');
  for (let i = 0; i < COUNT; i += 100) {
    const banners = await Promise.all(sim.hosts.slice(i, i + 100).map((h) => banner(h.port)));
    for (const b of banners) assert.match(b, /^SSH-2\.0-/);
  }
  const sample = Array.from({ length: 12 }, (_, i) => sim.hosts[Math.floor((i * COUNT) / 12)]!);
  for (const h of sample) assert.equal((await run(sim, h.name, 'hostname')).stdout, `${h.name}\n`);
  t.diagnostic(`all ${COUNT} hosts sent an SSH banner; ${sample.length} sampled hosts ran a command over a full SSH login`);
}

describe('scale', () => {
  it(`${COUNT} hosts start in one process and all accept connections`, async (t) => {
    const stateDir = tempStateDir();
    const hosts = Array.from({ length: COUNT }, (_, i) =>
      i < 3 ? hostSpec(`cp-${i + 1}`, 'control-plane') : hostSpec(`node-${String(i).padStart(4, '0')}`, 'worker'),
    );
    const effects = new FakeEffects('1.32.4', ['cp-1', 'cp-2', 'cp-3']);
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let started = performance.now();
    let sim = await startHostSimulator({ stateDir, hosts, effects });
    const firstStartMs = performance.now() - started;
    const rssAfter = process.memoryUsage().rss;
    try {
      await checkAll(t, sim);
    } finally {
      await sim.stop();
    }
    started = performance.now();
    sim = await startHostSimulator({ stateDir, hosts, effects });
    const restartMs = performance.now() - started;
    try {
      await checkAll(t, sim);
    } finally {
      await sim.stop();
    }
    const report =
      `${COUNT} hosts: first start ${firstStartMs.toFixed(0)} ms (keys generated, state seeded), restart on the same dir ${restartMs.toFixed(0)} ms; ` +
      `RSS ${mb(rssBefore)} before → ${mb(rssAfter)} after the first start (+${mb(rssAfter - rssBefore)}), heap used ${mb(process.memoryUsage().heapUsed)}`;
    t.diagnostic(report);
  });
});
