import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { assertNothingLeft, exitWithin, startDemo, stopDemos } from './demo-run.js';

/**
 * The demo interrupted (SIGINT) and with its reader gone (EPIPE, as in `npm run demo | head`): it
 * leaves no process it started and no port it held. Beside demo.test.ts, which runs it whole.
 */
describe('npm run demo, interrupted', () => {
  after(stopDemos);

  it('SIGINT mid-upgrade stops everything it started', { timeout: 300_000 }, async () => {
    const run = await startDemo();
    await run.waitFor('started upgrade/demo', 240_000);
    run.child.kill('SIGINT');
    const code = await exitWithin(run, 60_000);
    assert.equal(code, 130, run.stderr());
    assert.match(run.stderr(), /SIGINT: stopping everything the demo started/);
    assert.match(run.stderr(), /terminated the running upgrade workflow/);
    await assertNothingLeft(run, ['temporal-dev-server', 'worker', 'sim-cp-1/etcd', 'sim-cp-1/kube-apiserver', 'skewless-upgrade']);
  });

  it('a reader that goes away (npm run demo | head) stops everything too', { timeout: 300_000 }, async () => {
    const run = await startDemo();
    await run.waitFor('[demo] started the worker', 240_000);
    run.child.stdout?.destroy(); // the next line the demo writes meets EPIPE
    const code = await exitWithin(run, 90_000);
    assert.equal(code, 141, run.stderr());
    assert.match(run.stderr(), /EPIPE: stopping everything the demo started/);
    await assertNothingLeft(run, ['temporal-dev-server', 'worker']);
  });
});
