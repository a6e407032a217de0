import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { ClusterResolver } from '../../activities/cluster-access.js';
import type { ClusterConfig } from '../../activities/cluster-config.js';
import { createNotifyActivities } from '../../activities/notify-delivery.js';
import type { NotificationEvent } from '../../contracts/notification-event.js';
import { notificationEventProblems, parseNotifySinks } from '../../rules/index.js';
import { startNotifyReceiver, type NotifyReceiver } from '../helpers/notify-receiver.js';
import { tempDir } from '../helpers/temp-dir.js';

const event: NotificationEvent = {
  schemaVersion: 1,
  kind: 'run.waiting',
  id: 'upgrade/lab/run-1/waiting/gate/canary-1.33/1',
  at: '2026-12-04T21:00:00.000Z',
  cluster: 'lab',
  workflowId: 'upgrade/lab',
  summary: 'lab waits at gate canary-1.33: skewless approve lab --gate canary-1.33',
  command: 'skewless approve lab --gate canary-1.33',
  details: { waitingFor: 'gate', gate: 'canary-1.33' },
};

/** The failure an activity threw: type, retryability and its one line. */
async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, String(err));
    return err;
  }
  return assert.fail('delivered');
}

describe('deliverNotification against a real HTTP receiver', () => {
  let rx: NotifyReceiver;
  let acts: ReturnType<typeof createNotifyActivities>;
  const SECRET_PATH = '/services/T000/B000/XXXXsecretpath';
  before(async () => {
    rx = await startNotifyReceiver();
    const dir = tempDir('notify-delivery');
    writeFileSync(join(dir, 'bus-url'), `${rx.url('/bus')}\n`);
    writeFileSync(join(dir, 'token'), 's3cr3t-token\n');
    process.env.SKEWLESS_TEST_CHAT_URL = rx.url(SECRET_PATH);
    const notify = parseNotifySinks([
      { name: 'hook', type: 'webhook', url: rx.url('/hook'), secretFile: join(dir, 'token') },
      { name: 'chat', type: 'slack', urlEnv: 'SKEWLESS_TEST_CHAT_URL' },
      { name: 'bus', type: 'cloudevents', urlFile: join(dir, 'bus-url') },
      { name: 'down', type: 'webhook', url: rx.url('/down') },
      { name: 'gone', type: 'webhook', url: rx.url('/gone') },
      { name: 'unset', type: 'slack', urlEnv: 'SKEWLESS_TEST_NOT_SET' },
      { name: 'plainfile', type: 'webhook', urlFile: join(dir, 'plain-url'), timeoutSeconds: 1 },
    ]);
    writeFileSync(join(dir, 'plain-url'), 'http://hooks.example/in\n');
    const clusters: ClusterResolver = () => ({ config: { notify } as ClusterConfig }) as ReturnType<ClusterResolver>;
    acts = createNotifyActivities({ clusters });
    rx.answer('/down', 500);
    rx.answer('/gone', 404);
  });
  after(() => rx.stop());

  const last = (path: string) => rx.deliveries.filter((d) => d.path === path).at(-1);

  it('webhook: the event document itself, its idempotency key and the bearer token from a file', async () => {
    const answer = await acts.deliverNotification({ cluster: 'lab', sink: 'hook', event });
    assert.deepEqual(answer, { sink: 'hook', status: 200, answer: 'ok', attempt: 1 });
    const d = last('/hook');
    assert.deepEqual(d?.body, event);
    assert.deepEqual(notificationEventProblems(d?.body), []);
    assert.equal(d?.headers['idempotency-key'], event.id);
    assert.equal(d?.headers['x-skewless-event'], 'run.waiting');
    assert.equal(d?.headers.authorization, 'Bearer s3cr3t-token');
  });

  it('slack: text and blocks with the command, to the URL from an environment variable', async () => {
    await acts.deliverNotification({ cluster: 'lab', sink: 'chat', event });
    const body = last(SECRET_PATH)?.body as { text: string; blocks: { type: string; text?: { text: string } }[] };
    assert.equal(body.text, `[lab] ${event.summary}`);
    assert.deepEqual(
      body.blocks.map((b) => b.type),
      ['section', 'section', 'context'],
    );
    assert.equal(body.blocks[1]?.text?.text, '`skewless approve lab --gate canary-1.33`');
  });

  it('cloudevents: structured mode, the event as data, to the URL from a file', async () => {
    await acts.deliverNotification({ cluster: 'lab', sink: 'bus', event });
    const d = last('/bus');
    assert.equal(d?.headers['content-type'], 'application/cloudevents+json');
    const ce = d?.body as Record<string, unknown>;
    assert.equal(ce.specversion, '1.0');
    assert.equal(ce.id, event.id);
    assert.equal(ce.type, 'io.skewless.run.waiting');
    assert.equal(ce.source, '/skewless/upgrade/lab');
    assert.equal(ce.subject, 'lab');
    assert.deepEqual(ce.data, event);
  });

  it('a sink answering 500 is retried (NotificationUndelivered); a 404 is final (NotificationRefused); neither shows a URL', async () => {
    const down = await failureOf(acts.deliverNotification({ cluster: 'lab', sink: 'down', event }));
    assert.equal(down.type, 'NotificationUndelivered');
    assert.equal(down.nonRetryable, false);
    assert.equal(down.message, 'notify down: run.waiting answered HTTP 500: status 500');
    const gone = await failureOf(acts.deliverNotification({ cluster: 'lab', sink: 'gone', event }));
    assert.equal(gone.type, 'NotificationRefused');
    assert.equal(gone.nonRetryable, true);
    assert.doesNotMatch(down.message + gone.message, /127\.0\.0\.1/);
  });

  it('a URL variable not set, or a file URL to plain http off loopback: a configuration error naming the key, never the URL', async () => {
    const unset = await failureOf(acts.deliverNotification({ cluster: 'lab', sink: 'unset', event }));
    assert.equal(unset.type, 'ClusterConfigInvalid');
    assert.equal(unset.message, 'notify unset: urlEnv SKEWLESS_TEST_NOT_SET is not set on the worker');
    const plain = await failureOf(acts.deliverNotification({ cluster: 'lab', sink: 'plainfile', event }));
    assert.equal(plain.type, 'ClusterConfigInvalid');
    assert.match(plain.message, /^notify plainfile: the URL of urlFile is http:\/\/ to hooks\.example, not loopback/);
    assert.doesNotMatch(plain.message, /\/in/);
  });

  it('a sink that does not answer in its timeout is retried, naming the timeout', async () => {
    // A listening socket that never answers: the receiver's path that hangs is modelled by a closed-loop server.
    const { createServer } = await import('node:net');
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const [sink] = parseNotifySinks([{ name: 'slow', type: 'webhook', url: `http://127.0.0.1:${port}/`, timeoutSeconds: 1 }]);
    const slowActs = createNotifyActivities({
      clusters: () => ({ config: { notify: [sink] } as ClusterConfig }) as ReturnType<ClusterResolver>,
    });
    const slow = await failureOf(slowActs.deliverNotification({ cluster: 'lab', sink: 'slow', event }));
    silent.close();
    assert.equal(slow.type, 'NotificationUndelivered');
    assert.equal(slow.message, 'notify slow: run.waiting not delivered: no answer in 1 s');
  });
});
