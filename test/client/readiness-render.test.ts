import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ReadinessReport } from '../../activities/readiness/index.js';
import { parseAcknowledgements } from '../../client/acknowledge-flags.js';
import { UsageError } from '../../client/cli-support.js';
import { readinessLines, readinessView } from '../../client/render-readiness.js';
import type { ReadinessFinding } from '../../rules/readiness/finding.js';

const finding = (over: Partial<ReadinessFinding> = {}): ReadinessFinding => ({
  check: 'removed-api',
  severity: 'hold',
  hop: '1.33',
  what: 'authentication.k8s.io/v1beta1/selfsubjectreviews requested 3 times since the apiservers started, removed in 1.33; by ci-bot (old-tool/1.0, 3 times in the audit log read)',
  todo: 'move its clients to authentication.k8s.io/v1 before the hop',
  source: 'https://example.org/lifecycle',
  ack: 'removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews',
  ...over,
});
const report = (findings: ReadinessFinding[], problems: string[] = []): ReadinessReport => ({
  cluster: 'lab',
  findings,
  problems,
  looked: { removedApis: { metricsScrapes: 1, auditLogsRead: [], deprecatedSeries: findings.length, crdsStoredNotServed: 0 } },
});

describe('plan --cluster: the readiness section', () => {
  const cases: { name: string; report?: ReadinessReport; hops?: string[]; acks?: string[]; held: string[]; lines: RegExp[] }[] = [
    { name: 'a clean cluster', report: report([]), held: [], lines: [/^readiness: nothing found$/] },
    {
      name: 'an incomplete report says so',
      report: report([], ['apiserver /metrics: GET /metrics answered HTTP 500']),
      held: [],
      lines: [/^readiness: nothing found, but the report is incomplete:$/, /^ {2}could not read: apiserver \/metrics/],
    },
    {
      name: 'a held finding, with what, todo, ack and source',
      report: report([finding(), finding({ what: 'second client' })]),
      held: ['removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews'],
      lines: [
        /^readiness \(lab\): 2 findings; the upgrade would hold/,
        /^ {2}HOLD removed-api before 1\.33: authentication\.k8s\.io\/v1beta1\/selfsubjectreviews requested 3 times.*by ci-bot \(old-tool\/1\.0, 3 times in the audit log read\)$/,
        /^ {6}to do: move its clients/,
        /^ {6}acknowledge: removed-api:authentication\.k8s\.io\/v1beta1\/selfsubjectreviews$/,
        /^ {6}source: https:\/\/example\.org\/lifecycle$/,
      ],
    },
    {
      name: 'an acknowledged finding no longer holds; a node is named',
      report: report([finding({ check: 'cgroup-v1', node: 'w-3', ack: 'cgroup-v1:w-3' })]),
      acks: ['cgroup-v1:w-3'],
      held: [],
      lines: [/none holds a hop/, /^ {2}ACKNOWLEDGED cgroup-v1 before 1\.33 on w-3: /],
    },
    {
      name: 'a worker older than the checks, with hops to make',
      hops: ['1.33.7'],
      held: [],
      lines: [/^readiness: not checked \(the worker on lab predates the readiness checks\)$/],
    },
    { name: 'no hop: nothing to check', hops: [], held: [], lines: [/^readiness: nothing found$/] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const view = readinessView(c.report, c.hops ?? ['1.33.7'], c.acks ?? []);
      assert.deepEqual(view.held, c.held);
      const lines = readinessLines('lab', view);
      for (const re of c.lines)
        assert.ok(
          lines.some((l) => re.test(l)),
          `${re} in\n${lines.join('\n')}`,
        );
    });
  }
});

describe('--acknowledge and --acknowledge-removed-api: parsed, checked, split', () => {
  it('splits readiness names from PDBs and adds removed-api: to GROUP/VERSION/RESOURCE', () => {
    assert.deepEqual(
      parseAcknowledgements(
        ['default/web', 'cgroup-v1:w-3', 'default/web'],
        ['authentication.k8s.io/v1beta1/selfsubjectreviews', 'core/v1/componentstatuses'],
      ),
      {
        pdbs: ['default/web'],
        readiness: [
          'cgroup-v1:w-3',
          'removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews',
          'removed-api:core/v1/componentstatuses',
        ],
      },
    );
  });
  const bad: { acknowledge?: string[]; removed?: string[]; message: RegExp }[] = [
    { acknowledge: ['nosuchcheck:x'], message: /^--acknowledge: unknown acknowledgement "nosuchcheck:x": expected <check>:<subject>/ },
    { acknowledge: ['removed-api:'], message: /unknown acknowledgement "removed-api:"/ },
    { acknowledge: ['just-a-name'], message: /^--acknowledge takes NAMESPACE\/PDB, got "just-a-name"$/ },
    { removed: ['authentication.k8s.io/selfsubjectreviews'], message: /^--acknowledge-removed-api: .* is not GROUP\/VERSION\/RESOURCE/ },
    { removed: ['removed-api:a/v1/b'], message: /is not GROUP\/VERSION\/RESOURCE/ },
  ];
  for (const b of bad) {
    it(`refuses ${JSON.stringify(b.acknowledge ?? b.removed)} in one line`, () => {
      assert.throws(
        () => parseAcknowledgements(b.acknowledge, b.removed),
        (err: unknown) => err instanceof UsageError && b.message.test(err.message) && !err.message.includes('\n'),
      );
    });
  }
});
