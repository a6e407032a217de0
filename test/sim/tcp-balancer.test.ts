import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import { after, describe, it } from 'node:test';
import { freePort } from '../../tooling/free-port.js';
import { startTcpBalancer } from '../../sim/cluster/tcp-balancer.js';

/** A server that answers every connection with its name, then closes. */
async function namedServer(name: string): Promise<{ port: number; server: Server }> {
  const server = createServer((s) => s.end(name));
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, server };
}

/** What one connection through the balancer reads ('' when it is closed without an answer). */
const ask = (port: number): Promise<string> =>
  new Promise((resolve) => {
    let text = '';
    const s = connect({ host: '127.0.0.1', port });
    s.on('data', (d) => (text += d.toString()));
    s.on('close', () => resolve(text));
    s.on('error', () => resolve(text));
  });

describe('the loopback TCP balancer in front of several apiservers', () => {
  const servers: Server[] = [];
  after(() => servers.forEach((s) => s.close()));

  it('sends each new connection to the next backend, passes over one that refuses, and closes when none answers', async () => {
    const a = await namedServer('a');
    const b = await namedServer('b');
    servers.push(a.server, b.server);
    const lb = await startTcpBalancer([a.port, b.port]);
    try {
      assert.deepEqual([await ask(lb.port), await ask(lb.port), await ask(lb.port), await ask(lb.port)], ['a', 'b', 'a', 'b']);
      await new Promise<void>((resolve) => b.server.close(() => resolve()));
      assert.deepEqual(
        [await ask(lb.port), await ask(lb.port), await ask(lb.port)],
        ['a', 'a', 'a'],
        'b restarting: a takes every connection',
      );
      const c = await namedServer('c');
      servers.push(c.server);
      lb.setBackends([c.port]);
      assert.equal(await ask(lb.port), 'c');
      lb.setBackends([b.port]);
      assert.equal(await ask(lb.port), '', 'no backend answers: the client is closed, not left hanging');
    } finally {
      await lb.stop();
    }
  });
});
