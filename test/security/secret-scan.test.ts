import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { proceedSmokeSignal } from '../../workflows/messages.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { archiveHistories, readArchivedHistories, readWorldSecrets, recordWorldSecrets } from '../helpers/history-archive.js';
import {
  describeFinding,
  fingerprintSecret,
  scanHistory,
  scanText,
  secretMaterial,
  STRIDE,
  WINDOW,
  type Finding,
} from '../helpers/secret-scan.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The secret scanner can fail: a secret planted in each kind of history field is found and named
 * (workflow, event id, field), real histories without secrets pass, and the archive → scan pipeline
 * finds secrets a real workflow run on the real dev server put in its history.
 */

const pem = (type: 'ed25519' | 'rsa'): string => {
  const { privateKey } = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
};

// A test world of its own: an SSH key and a kubeconfig with an embedded client key.
const sshKey = pem('ed25519');
const clientKey = pem('rsa');
const kubeconfig = `apiVersion: v1\nkind: Config\nusers:\n- name: skewless-worker\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n    client-key-data: ${Buffer.from(clientKey).toString('base64')}\n`;
const body = (key: string): string =>
  key
    .split('\n')
    .filter((l) => l && !l.startsWith('-----'))
    .join('');
const known = new Map<string, string>();
for (const [name, text] of [
  ['ssh/id_ed25519', sshKey],
  ['worker.kubeconfig', kubeconfig],
] as const) {
  for (const h of secretMaterial(text).flatMap(fingerprintSecret)) known.set(h, `world: ${name}`);
}

const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);
const payloads = (value: unknown) => ({ payloads: [payload(value)] });

/** Each kind of field a history carries, with where a planted value lands (the field path reported). */
type Plant = (v: unknown) => { eventType: string; attributes: Record<string, unknown>; extra?: Record<string, unknown> };
const text = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));
const failure = (v: unknown, where: 'message' | 'stackTrace' | 'cause' | 'details' | 'encoded') => ({
  message: where === 'message' ? `drain failed: ${text(v)}` : 'drain failed',
  stackTrace: where === 'stackTrace' ? `Error: x\n    at f (${text(v)})` : 'Error: x\n    at f (activities/drain.ts:1:1)',
  ...(where === 'cause' ? { cause: { message: 'outer', cause: { message: `inner ${text(v)}` } } } : {}),
  applicationFailureInfo: { type: 'HostCommandFailed', ...(where === 'details' ? { details: payloads({ stderrTail: v }) } : {}) },
  ...(where === 'encoded' ? { encodedAttributes: payload({ message: text(v), stack_trace: '' }) } : {}),
});

const FIELDS: [string, Plant, RegExp][] = [
  [
    'workflow input',
    (v) => ({
      eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
      attributes: { workflowType: { name: 'w' }, input: payloads({ cluster: 'c', note: v }) },
    }),
    /^workflowExecutionStartedEventAttributes\.input\.payloads\[0\]<json>\.note/,
  ],
  [
    'memo',
    (v) => ({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', attributes: { memo: { fields: { progress: payload(v) } } } }),
    /^workflowExecutionStartedEventAttributes\.memo\.fields\.progress<json>/,
  ],
  [
    'search attribute',
    (v) => ({
      eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
      attributes: { searchAttributes: { indexedFields: { SkewlessCluster: payload([text(v)]) } } },
    }),
    /searchAttributes\.indexedFields\.SkewlessCluster<json>\[0\]$/,
  ],
  [
    'header',
    (v) => ({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', attributes: { header: { fields: { auth: payload(v) } } } }),
    /header\.fields\.auth<json>/,
  ],
  [
    'user metadata (summary)',
    (v) => ({
      eventType: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED',
      attributes: { activityType: { name: 'drainNode' } },
      extra: { userMetadata: { summary: payload(text(v)) } },
    }),
    /^userMetadata\.summary<json>$/,
  ],
  [
    'activity input',
    (v) => ({
      eventType: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED',
      attributes: { activityType: { name: 'drainNode' }, input: payloads({ node: 'w1', opts: [v] }) },
    }),
    /activityTaskScheduledEventAttributes\.input\.payloads\[0\]<json>\.opts\[0\]/,
  ],
  [
    'activity result',
    (v) => ({ eventType: 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED', attributes: { result: payloads({ out: v }) } }),
    /activityTaskCompletedEventAttributes\.result\.payloads\[0\]<json>\.out/,
  ],
  [
    'failure message',
    (v) => ({ eventType: 'EVENT_TYPE_ACTIVITY_TASK_FAILED', attributes: { failure: failure(v, 'message') } }),
    /activityTaskFailedEventAttributes\.failure\.message$/,
  ],
  [
    'failure stack trace',
    (v) => ({ eventType: 'EVENT_TYPE_ACTIVITY_TASK_FAILED', attributes: { failure: failure(v, 'stackTrace') } }),
    /activityTaskFailedEventAttributes\.failure\.stackTrace$/,
  ],
  [
    'failure cause chain',
    (v) => ({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_FAILED', attributes: { failure: failure(v, 'cause') } }),
    /workflowExecutionFailedEventAttributes\.failure\.cause\.cause\.message$/,
  ],
  [
    'failure details',
    (v) => ({ eventType: 'EVENT_TYPE_ACTIVITY_TASK_FAILED', attributes: { failure: failure(v, 'details') } }),
    /failure\.applicationFailureInfo\.details\.payloads\[0\]<json>\.stderrTail/,
  ],
  [
    'encoded failure attributes',
    (v) => ({ eventType: 'EVENT_TYPE_ACTIVITY_TASK_FAILED', attributes: { failure: failure(v, 'encoded') } }),
    /failure\.encodedAttributes<json>\.message$/,
  ],
  [
    "previous attempt's failure",
    (v) => ({ eventType: 'EVENT_TYPE_ACTIVITY_TASK_STARTED', attributes: { attempt: 2, lastFailure: failure(v, 'message') } }),
    /activityTaskStartedEventAttributes\.lastFailure\.message$/,
  ],
  [
    'heartbeat details',
    (v) => ({
      eventType: 'EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT',
      attributes: {
        failure: {
          message: 'heartbeat timeout',
          timeoutFailureInfo: { timeoutType: 'TIMEOUT_TYPE_HEARTBEAT', lastHeartbeatDetails: payloads({ step: 'drain', v }) },
        },
      },
    }),
    /timeoutFailureInfo\.lastHeartbeatDetails\.payloads\[0\]<json>\.v/,
  ],
  [
    'signal arguments',
    (v) => ({
      eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
      attributes: { signalName: 'pause', input: payloads({ by: 'ops', reason: v }) },
    }),
    /workflowExecutionSignaledEventAttributes\.input\.payloads\[0\]<json>\.reason/,
  ],
  [
    'update arguments',
    (v) => ({
      eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      attributes: { acceptedRequest: { input: { name: 'approve', args: payloads({ comment: v }) } } },
    }),
    /acceptedRequest\.input\.args\.payloads\[0\]<json>\.comment/,
  ],
  [
    'marker',
    (v) => ({ eventType: 'EVENT_TYPE_MARKER_RECORDED', attributes: { markerName: 'core_patch', details: { data: payloads(v) } } }),
    /markerRecordedEventAttributes\.details\.data\.payloads\[0\]<json>/,
  ],
  [
    'upserted search attributes',
    (v) => ({
      eventType: 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
      attributes: { searchAttributes: { indexedFields: { SkewlessPhase: payload(text(v)) } } },
    }),
    /upsertWorkflowSearchAttributesEventAttributes\.searchAttributes\.indexedFields\.SkewlessPhase<json>/,
  ],
  [
    'upserted memo',
    (v) => ({
      eventType: 'EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED',
      attributes: { upsertedMemo: { fields: { blocked: payload({ message: v }) } } },
    }),
    /workflowPropertiesModifiedEventAttributes\.upsertedMemo\.fields\.blocked<json>\.message/,
  ],
  [
    'child workflow input',
    (v) => ({
      eventType: 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED',
      attributes: { workflowId: 'c/1', input: payloads({ x: v }) },
    }),
    /startChildWorkflowExecutionInitiatedEventAttributes\.input\.payloads\[0\]<json>\.x/,
  ],
  [
    'continue-as-new input',
    (v) => ({ eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW', attributes: { input: payloads({ carried: v }) } }),
    /workflowExecutionContinuedAsNewEventAttributes\.input\.payloads\[0\]<json>\.carried/,
  ],
  [
    'workflow result (binary payload)',
    (v) => ({
      eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED',
      attributes: { result: { payloads: [{ metadata: { encoding: Buffer.from('binary/plain') }, data: Buffer.from(text(v)) }] } },
    }),
    /workflowExecutionCompletedEventAttributes\.result\.payloads\[0\]<bytes>$/,
  ],
];

/** Kinds of secret, each with the rule that must catch it. */
const SECRETS: [string, unknown, RegExp][] = [
  [
    "the world's SSH key body (no header)",
    body(sshKey).slice(7, 7 + WINDOW + STRIDE),
    /secret of the test world \(world: ssh\/id_ed25519\)/,
  ],
  [
    "the world's kubeconfig client key (decoded, no header)",
    body(clientKey).slice(300, 360),
    /secret of the test world \(world: worker\.kubeconfig\)/,
  ],
  [
    "the world's kubeconfig client-key-data value",
    Buffer.from(clientKey).toString('base64').slice(100, 160),
    /secret of the test world \(world: worker\.kubeconfig\)/,
  ],
  ['any private key in PEM', pem('ed25519'), /private-key PEM block/],
  ['an OpenSSH private key body', 'AAAAb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB', /OpenSSH private-key body/],
  ['a kubeconfig', 'users:\n- user:\n    client-key-data: QUJD\n', /kubeconfig client-key-data/],
  ['a kubeconfig token', 'user:\n  token: eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9', /kubeconfig token/],
  ['a bearer token', 'Authorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6', /bearer token/],
  ['a password', 'password: hunter2hunter2', /password/],
  ['a value under a "token" key', { token: 'abcdefgh12345678' }, /value of a "token" key|kubeconfig token/],
];

function history(plant: ReturnType<Plant>): { workflowId: string; runId: string; history: { events: unknown[] } } {
  const key = `${plant.eventType
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())}EventAttributes`;
  const events = [
    { eventId: 1, eventType: 'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED', workflowTaskScheduledEventAttributes: { taskQueue: { name: 'q' } } },
    { eventId: 7, eventType: plant.eventType, [key]: plant.attributes, ...plant.extra },
  ];
  // Through the SDK's own JSON form, exactly as the archive stores histories.
  return { workflowId: 'upgrade/lab', runId: 'r1', history: JSON.parse(historyToJSON({ events } as never)) as { events: unknown[] } };
}

describe('secret scanner: planted secrets are found in every kind of field', () => {
  for (const [field, plant, path] of FIELDS) {
    it(`in the ${field}`, () => {
      for (const [what, secret, rule] of SECRETS) {
        const { findings } = scanHistory(history(plant(secret)), known);
        const hit = findings.find((f) => rule.test(f.rule) && path.test(f.field));
        assert.ok(hit, `${what} in the ${field} not found; findings: ${JSON.stringify(findings.map(describeFinding))}`);
        assert.equal(hit.eventId, '7');
        assert.equal(hit.workflowId, 'upgrade/lab');
        assert.match(describeFinding(hit), /^upgrade\/lab \(run r1\) event 7 EVENT_TYPE_\w+: \S+: /);
        assert.ok(!describeFinding(hit).includes(text(secret)), 'a finding never repeats the secret');
      }
      // The same event without a secret is clean: the finding above is the plant, not the field.
      assert.deepEqual(scanHistory(history(plant('worker-3 drained in 12 s')), known).findings, []);
    });
  }
});

describe('secret scanner: world-secret fingerprints', () => {
  it(`catch any ${WINDOW + STRIDE - 1}-character piece of a key, at any offset, and hold no window of it`, () => {
    const b = body(clientKey);
    for (let i = 0; i + WINDOW + STRIDE - 1 <= b.length; i += 3) {
      assert.ok(scanText(`x ${b.slice(i, i + WINDOW + STRIDE - 1)} y`, known).length > 0, `piece at ${i}`);
    }
    assert.deepEqual(scanText(`x ${b.slice(40, 40 + WINDOW - 1)} y`, known), [], 'shorter than a window: not a finding');
    const hashes = secretMaterial(kubeconfig).flatMap(fingerprintSecret);
    assert.ok(hashes.every((h) => /^[0-9a-f]{16}$/.test(h) && !b.includes(h)));
  });

  it('take private keys and kubeconfig client keys, not certificates or public keys', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const pub = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    assert.deepEqual(secretMaterial(pub), []);
    assert.equal(secretMaterial(sshKey).length, 2, 'the PEM body line by line and joined');
    assert.ok(secretMaterial(kubeconfig).length >= 2, 'client-key-data as written and its decoded key');
    assert.deepEqual(secretMaterial('client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tTUlJQ0F6Q0NBZXVnQXdJQkFnSUlRdGl2'), []);
  });

  it('are recorded from a state directory without writing any secret to the archive', () => {
    const dir = tempDir('secrets');
    try {
      const world = join(dir, 'world');
      mkdirSync(join(world, 'ssh'), { recursive: true });
      writeFileSync(join(world, 'ssh', 'id_ed25519'), sshKey);
      writeFileSync(join(world, 'ssh', 'id_ed25519.pub'), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1 sim\n');
      writeFileSync(join(world, 'worker.kubeconfig'), kubeconfig);
      const archive = join(dir, 'archive');
      assert.equal(recordWorldSecrets(world, 'lab', { dir: archive }), 2);
      const record = readFileSync(join(archive, 'secrets', 'lab.json'), 'utf8');
      for (const secret of [body(sshKey), body(clientKey), Buffer.from(clientKey).toString('base64')]) {
        for (let i = 0; i + 16 <= secret.length; i += 8)
          assert.ok(!record.includes(secret.slice(i, i + 16)), 'no piece of a secret in the record');
      }
      const fromArchive = readWorldSecrets(archive);
      assert.ok(scanText(body(sshKey).slice(10, 70), fromArchive).some((r) => /lab: ssh\/id_ed25519/.test(r)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('secret scanner: no false alarm on real histories', () => {
  it('finds nothing in the saved histories of real upgrades (test/replay/histories)', () => {
    const dir = new URL('../../../test/replay/histories/', import.meta.url);
    let events = 0;
    for (const name of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
      const h = JSON.parse(readFileSync(new URL(name, dir), 'utf8')) as { events: unknown[] };
      const { findings, stats } = scanHistory({ workflowId: name, runId: '-', history: h }, known);
      assert.deepEqual(findings.map(describeFinding), []);
      assert.ok(stats.payloads > 0);
      events += stats.events;
    }
    assert.ok(events > 500, `${events} events scanned`);
  });
});

describe('archive → scan on the real dev server', () => {
  let env: TestWorkflowEnvironment;
  let archive: string;
  before(async () => {
    archive = tempDir('archive-test');
    env = await startDevServer({ archive: false }); // its planted secrets must not reach the run's archive
  });
  after(async () => {
    await env?.teardown();
    rmSync(archive, { recursive: true, force: true });
  });

  it(
    'finds secrets a workflow run put in its input, memo, search attributes, signal, activity failure and result',
    { timeout: 120_000 },
    async () => {
      const leak = body(sshKey).slice(0, 60);
      let attempts = 0;
      const findings: Finding[] = await withMockedWorker(
        env,
        {
          describeWorker: async () => {
            // First attempt fails with the key in its message and details; the retry returns it.
            if (++attempts === 1)
              throw ApplicationFailure.create({ type: 'Leaky', message: `ssh said ${leak}`, details: [{ key: sshKey }] });
            return { hostname: leak, nodeVersion: process.version, pid: process.pid };
          },
        },
        'leak',
        async (taskQueue) => {
          const handle = await env.client.workflow.start('toolchainSmokeWorkflow', {
            taskQueue,
            workflowId: `leak/${taskQueue}`,
            args: [{ from: '1.32.4', to: '1.33', available: ['1.33.7'], note: leak }],
            memo: { note: `client-key-data: ${leak}` },
            typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.cluster, value: leak }],
          });
          await handle.signal(proceedSmokeSignal, { by: 'ops', comment: `password: ${leak}` });
          await handle.result();
          // A failing run: the rules' message quotes (40 characters of) the bad version it was given.
          const failed = env.client.workflow.execute('toolchainSmokeWorkflow', {
            taskQueue,
            workflowId: `leak-failed/${taskQueue}`,
            args: [{ from: '-----BEGIN OPENSSH PRIVATE KEY-----', to: '1.33', available: [] }],
          });
          await assert.rejects(failed, WorkflowFailedError);
          const result = await archiveHistories(env.client, 'planted', { dir: archive, namespace: env.namespace ?? 'default' });
          assert.equal(result.histories, 2);
          const worldKnown = new Map(known);
          return [...readArchivedHistories(archive)].flatMap((h) => scanHistory(h, worldKnown).findings);
        },
      );
      const seen = findings.map((f) => `${f.eventType} ${f.field} ${f.rule}`);
      const expect: [RegExp, string][] = [
        [
          /WORKFLOW_EXECUTION_STARTED workflowExecutionStartedEventAttributes\.input\.payloads\[0\]<json>\.note secret of the test world/,
          'workflow input',
        ],
        [/WORKFLOW_EXECUTION_STARTED workflowExecutionStartedEventAttributes\.memo\.fields\.note<json> kubeconfig client-key-data/, 'memo'],
        [
          /WORKFLOW_EXECUTION_STARTED workflowExecutionStartedEventAttributes\.searchAttributes\.indexedFields\.SkewlessCluster<json> secret of the test world/,
          'search attribute',
        ],
        [/WORKFLOW_EXECUTION_SIGNALED workflowExecutionSignaledEventAttributes\.input\.payloads\[0\]<json>\.comment password/, 'signal'],
        [
          /ACTIVITY_TASK_STARTED activityTaskStartedEventAttributes\.lastFailure\.message secret of the test world/,
          "failed attempt's message",
        ],
        [
          /ACTIVITY_TASK_STARTED activityTaskStartedEventAttributes\.lastFailure\.applicationFailureInfo\.details\.payloads\[0\]<json>\.key private-key PEM block/,
          'failure details',
        ],
        [
          /ACTIVITY_TASK_COMPLETED activityTaskCompletedEventAttributes\.result\.payloads\[0\]<json>\.hostname secret of the test world/,
          'activity result',
        ],
        [/WORKFLOW_EXECUTION_FAILED workflowExecutionFailedEventAttributes\.failure\.message private-key PEM block/, 'workflow failure'],
      ];
      for (const [pattern, what] of expect)
        assert.ok(
          seen.some((s) => pattern.test(s)),
          `${what} not found in:\n${seen.join('\n')}`,
        );
    },
  );
});
