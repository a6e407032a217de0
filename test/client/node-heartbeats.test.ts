// `status` shows a node's API throttling from its node workflow's description (the running activity's last
// heartbeat), not from a query. The description is the Temporal service's answer, built here as it comes
// (payloads through the default converter, no codec); the drain's heartbeat is tested in watch-waits/apf-throttle.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { apiNoteOf, drainRoundOf, heartbeatReader } from '../../client/node-heartbeats.js';

function clientDescribing(pending: { type: string; details?: unknown }[], asked: string[] = []): Client {
  return {
    options: { loadedDataConverter: { payloadCodecs: [], payloadConverter: defaultPayloadConverter } },
    withDeadline: (_: number, fn: () => Promise<unknown>) => fn(),
    workflow: {
      getHandle: (id: string) => ({
        describe: () => {
          asked.push(id);
          return Promise.resolve({
            raw: {
              pendingActivities: pending.map((p) => ({
                activityType: { name: p.type },
                ...(p.details === undefined ? {} : { heartbeatDetails: { payloads: [defaultPayloadConverter.toPayload(p.details)] } }),
              })),
            },
          });
        },
      }),
    },
  } as unknown as Client;
}

describe('apiNoteOf', () => {
  it("names the running activity's throttling from its heartbeat, read by describe", async () => {
    const asked: string[] = [];
    const client = clientDescribing(
      [
        {
          type: 'drainNode',
          details: { node: 'worker-3', apiError: 'throttled by the API server (Priority and Fairness): retrying after 2 s', throttled: 4 },
        },
      ],
      asked,
    );
    assert.equal(
      await apiNoteOf(client, 'upgrade/c/1.33/worker-3'),
      'drainNode: throttled by the API server (Priority and Fairness): retrying after 2 s (4 request(s) throttled this attempt)',
    );
    assert.deepEqual(asked, ['upgrade/c/1.33/worker-3']);
  });

  it('says nothing for a heartbeat without an API error, no pending activity, or a describe that fails', async () => {
    assert.equal(await apiNoteOf(clientDescribing([{ type: 'drainNode', details: { node: 'w', remaining: [] } }]), 'x'), undefined);
    assert.equal(await apiNoteOf(clientDescribing([]), 'x'), undefined);
    const failing = { withDeadline: () => Promise.reject(new Error('unreachable')) } as unknown as Client;
    assert.equal(await apiNoteOf(failing, 'x'), undefined);
  });
});

describe('drainRoundOf', () => {
  it("reads the round from drainNode's heartbeat, and nothing from another activity or a malformed round", async () => {
    const round = { index: 2, of: 3, order: 10 };
    assert.deepEqual(await drainRoundOf(clientDescribing([{ type: 'drainNode', details: { node: 'w', round } }]), 'x'), round);
    assert.equal(await drainRoundOf(clientDescribing([{ type: 'checkNodeReady', details: { round } }]), 'x'), undefined);
    assert.equal(await drainRoundOf(clientDescribing([{ type: 'drainNode', details: { round: { index: '2' } } }]), 'x'), undefined);
  });
});

describe('heartbeatReader', () => {
  it('describes each node workflow once for every note status reads from it', async () => {
    const asked: string[] = [];
    const client = clientDescribing(
      [{ type: 'drainNode', details: { round: { index: 1, of: 2, order: 0 }, apiError: 'HTTP 429' } }],
      asked,
    );
    const beats = heartbeatReader(client);
    assert.deepEqual(await drainRoundOf(beats, 'upgrade/c/1.33/w1'), { index: 1, of: 2, order: 0 });
    assert.equal(await apiNoteOf(beats, 'upgrade/c/1.33/w1'), 'drainNode: HTTP 429');
    await apiNoteOf(beats, 'upgrade/c/1.33/w2');
    assert.deepEqual(asked, ['upgrade/c/1.33/w1', 'upgrade/c/1.33/w2']);
  });
});
