import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  DETAILS_OF,
  NOTIFICATION_EVENT_KINDS,
  NOTIFICATION_EVENT_SCHEMA,
  notificationKey,
  type NotificationEvent,
} from '../../contracts/notification-event.js';
import { notificationEventProblems } from '../../rules/index.js';

const good: NotificationEvent = {
  schemaVersion: 1,
  kind: 'run.waiting',
  id: notificationKey('upgrade/lab', 'run-1', 'waiting/gate/canary-1.33/1'),
  at: '2026-12-04T21:00:00.000Z',
  cluster: 'lab',
  workflowId: 'upgrade/lab',
  summary: 'lab waits at gate canary-1.33',
  command: 'skewless approve lab --gate canary-1.33',
  details: { waitingFor: 'gate', gate: 'canary-1.33' },
};

describe('the notification event document', () => {
  it('docs/notifications.md prints the schema the contract holds', () => {
    const doc = readFileSync(new URL('../../../docs/notifications.md', import.meta.url), 'utf8');
    const block = /```json\n([\s\S]*?)\n```/.exec(doc)?.[1];
    assert.ok(block, 'docs/notifications.md has a json block');
    assert.deepEqual(JSON.parse(block), JSON.parse(JSON.stringify(NOTIFICATION_EVENT_SCHEMA)));
    // Every kind is in the document's table.
    for (const kind of NOTIFICATION_EVENT_KINDS) assert.match(doc, new RegExp(`\\| \`${kind.replace('.', '\\.')}\` \\|`), kind);
  });

  it('a conforming event has no problem; each departure is named', () => {
    assert.deepEqual(notificationEventProblems(good), []);
    assert.deepEqual(notificationEventProblems({ ...good, kind: 'run.begun' }), [
      'kind: "run.begun" not one of ' + NOTIFICATION_EVENT_KINDS.join(', '),
    ]);
    assert.deepEqual(notificationEventProblems({ ...good, url: 'https://x' }), ['url: not in the schema']);
    assert.deepEqual(notificationEventProblems({ ...good, schemaVersion: 2 }), ['schemaVersion: 2 not one of 1']);
    assert.deepEqual(notificationEventProblems({ ...good, at: 'yesterday' }), [
      `at: does not match ${NOTIFICATION_EVENT_SCHEMA.properties.at.pattern}`,
    ]);
    assert.deepEqual(notificationEventProblems({ ...good, command: 'kubectl drain' }), ['command: does not match ^skewless ']);
    const { summary: _s, ...noSummary } = good;
    assert.deepEqual(notificationEventProblems(noSummary), ['summary: missing']);
    assert.deepEqual(notificationEventProblems({ ...good, details: {} }), ['details.waitingFor: missing for run.waiting']);
    const { command: _c, ...noCommand } = good;
    assert.deepEqual(notificationEventProblems(noCommand), ['command: missing for run.waiting']);
  });

  it('every kind names the details it always carries', () => {
    assert.deepEqual(Object.keys(DETAILS_OF).sort(), [...NOTIFICATION_EVENT_KINDS].sort());
  });

  it('the idempotency key is the workflow id, its first run and the transition', () => {
    assert.equal(notificationKey('upgrade/lab', 'abc', 'hop/1.33.7'), 'upgrade/lab/abc/hop/1.33.7');
  });
});
