import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { freePort, freePortIn, HOST_PORTS_LOW } from '../../tooling/free-port.js';

const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

test("freePort picks ports below the ephemeral range, where client sockets cannot take them before the server starts, and below the hosts' SSH ports", async () => {
  const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
  const high = Math.min(ephemeralStart, HOST_PORTS_LOW);
  for (const port of ports) {
    assert.ok(port >= 10_000 && port < high, `${port} is outside [10000, ${high})`);
  }
  assert.ok(new Set(ports).size > 1, 'ports are spread, not one fixed port');
});

test('freePort passes over a port that is already listened on', async () => {
  const port = await freePort();
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
  try {
    // a range of two ports, one of them held: every pick is the other one
    const picks = await Promise.all(Array.from({ length: 10 }, () => freePortIn(port, port + 2)));
    assert.deepEqual(new Set(picks), new Set([port + 1]));
    assert.equal(await freePortIn(port, port + 1), undefined, 'no free port in the range: undefined, not the held one');
  } finally {
    holder.close();
  }
});

test('freePort never hands out one port twice in a while, in one process or across processes', async () => {
  const picked: number[] = [];
  for (let i = 0; i < 200; i++) picked.push(await freePort());
  assert.equal(new Set(picked).size, picked.length, 'each pick a port of its own');
});
