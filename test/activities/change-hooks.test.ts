import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { createChangeHookActivities } from '../../activities/change-hooks.js';
import type { ClusterResolver } from '../../activities/cluster-access.js';
import type { ClusterConfig } from '../../activities/cluster-config.js';
import type { NotificationEvent } from '../../contracts/notification-event.js';
import { parseHooks } from '../../rules/index.js';
import { startNotifyReceiver, type NotifyReceiver } from '../helpers/notify-receiver.js';
import { tempDir } from '../helpers/temp-dir.js';

const event: NotificationEvent = {
  schemaVersion: 1,
  kind: 'hook',
  id: 'upgrade/lab/run-1/hook/beforeNode/1.33.7/worker-2',
  at: '2026-12-04T21:00:00.000Z',
  cluster: 'lab',
  workflowId: 'upgrade/lab',
  summary: 'lab: beforeNode 1.33.7 worker-2',
  details: { point: 'beforeNode', hop: '1.33.7', node: 'worker-2' },
};

async function refusal(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, String(err));
    return err;
  }
  return assert.fail('the hook said yes');
}

describe('runChangeHook: real programs and a real webhook', () => {
  let rx: NotifyReceiver;
  let acts: ReturnType<typeof createChangeHookActivities>;
  let seen: string;
  before(async () => {
    rx = await startNotifyReceiver();
    rx.answer('/no', 403);
    const dir = tempDir('change-hooks');
    seen = join(dir, 'seen.json');
    const program = (name: string, body: string) => {
      const file = join(dir, name);
      writeFileSync(file, `#!${process.execPath}\n${body}\n`);
      chmodSync(file, 0o755);
      return file;
    };
    const yes = program(
      'yes.cjs',
      `require('node:fs').writeFileSync(${JSON.stringify(seen)}, JSON.stringify({ event: JSON.parse(process.env.SKEWLESS_EVENT), point: process.env.SKEWLESS_HOOK_POINT, args: process.argv.slice(2) })); console.log('CHG-7 open');`,
    );
    const no = program('no.cjs', `console.log('checking'); console.error('CHG-7 is closed'); process.exit(4);`);
    const slow = program('slow.cjs', `setTimeout(() => {}, 60000);`);
    const hooks = parseHooks([
      // A word with shell syntax stays one argument: no shell ever reads it.
      { name: 'yes', at: ['beforeNode'], command: [yes, 'open', '$(touch /tmp/pwned); *'] },
      { name: 'no', at: ['beforeNode'], command: [no] },
      { name: 'slow', at: ['beforeNode'], command: [slow], timeoutSeconds: 1 },
      { name: 'web', at: ['beforeNode'], url: rx.url('/yes') },
      { name: 'webno', at: ['beforeNode'], url: rx.url('/no') },
    ]);
    const clusters: ClusterResolver = () => ({ config: { hooks } as ClusterConfig }) as ReturnType<ClusterResolver>;
    acts = createChangeHookActivities({ clusters });
  });
  after(() => rx.stop());

  it('a command that exits 0 says yes with its last line; it got the event, the point and its words untouched', async () => {
    const r = await acts.runChangeHook({ cluster: 'lab', hook: 'yes', point: 'beforeNode', event });
    assert.deepEqual(r, { hook: 'yes', answer: 'CHG-7 open' });
    const got = JSON.parse(readFileSync(seen, 'utf8')) as { event: unknown; point: string; args: string[] };
    assert.deepEqual(got, { event, point: 'beforeNode', args: ['open', '$(touch /tmp/pwned); *'] });
  });

  it('a command that exits non-zero, or does not answer in its timeout, says no: HookRefused naming the hook and the point', async () => {
    const no = await refusal(acts.runChangeHook({ cluster: 'lab', hook: 'no', point: 'beforeNode', event }));
    assert.equal(no.type, 'HookRefused');
    assert.equal(no.nonRetryable, true);
    assert.equal(no.message, 'hook no at beforeNode said no: exit 4: CHG-7 is closed');
    const slow = await refusal(acts.runChangeHook({ cluster: 'lab', hook: 'slow', point: 'beforeNode', event }));
    assert.equal(slow.message, 'hook slow at beforeNode did not answer in 1 s');
  });

  it('a webhook gets the event; 2xx says yes, 403 says no with the body, never the URL', async () => {
    assert.deepEqual(await acts.runChangeHook({ cluster: 'lab', hook: 'web', point: 'beforeNode', event }), { hook: 'web', answer: 'ok' });
    assert.deepEqual(rx.deliveries.find((d) => d.path === '/yes')?.body, event);
    const no = await refusal(acts.runChangeHook({ cluster: 'lab', hook: 'webno', point: 'beforeNode', event }));
    assert.equal(no.message, 'hook webno at beforeNode said no: HTTP 403: status 403');
  });
});
