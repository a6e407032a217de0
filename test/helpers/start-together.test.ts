import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startTogether } from './start-together.js';

describe("startTogether (the tests' Promise.all for servers and simulations)", () => {
  it('gives every started value, in order', async () => {
    assert.deepEqual(await startTogether([Promise.resolve(1), Promise.resolve('two')]), [1, 'two']);
  });

  it('when one fails, stops (stop or teardown) what did start, then throws the failure', async () => {
    const stopped: string[] = [];
    const cluster = { stop: async () => void stopped.push('cluster') };
    const env = { teardown: async () => void stopped.push('env') };
    const withUi = { env: { teardown: async () => void stopped.push('ui env') } };
    const late = new Promise((resolve) => setTimeout(() => resolve({ stop: async () => void stopped.push('late') }), 20));
    await assert.rejects(
      startTogether([
        Promise.resolve(env),
        Promise.reject(new Error('Failed to connect before the deadline')),
        Promise.resolve(cluster),
        late,
        Promise.resolve(withUi),
      ]),
      /Failed to connect before the deadline/,
    );
    assert.deepEqual(stopped.sort(), ['cluster', 'env', 'late', 'ui env'], 'a resource that started after the failure is stopped too');
  });
});
