import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FLEET_POLICY_KEYS, parseFleetSpec, RuleError } from '../../rules/index.js';

const base = () => ({
  name: 'prod',
  stages: [
    { name: 'admin', clusters: [{ name: 'admin', to: '1.34', approve: true, policy: { approveWorkers: true } }] },
    { name: 'users', clusters: ['user-a', { name: 'user-b', to: 'next-minor', policy: { batchSize: 2, maxUnavailable: '25%' } }] },
  ],
  defaults: { to: 'latest-patch', policy: { canary: 1 } },
});

describe('fleet file: parseFleetSpec accepts', () => {
  it('stages in order, defaults merged under each cluster, string entries, maxParallel default 1', () => {
    const spec = parseFleetSpec(base());
    assert.equal(spec.name, 'prod');
    assert.equal(spec.maxParallel, 1);
    assert.deepEqual(
      spec.clusters.map((c) => [c.cluster, c.stage, c.stageIndex, c.to, c.approve]),
      [
        ['admin', 'admin', 0, '1.34', true],
        ['user-a', 'users', 1, 'latest-patch', false],
        ['user-b', 'users', 1, 'next-minor', false],
      ],
    );
    assert.deepEqual(spec.clusters[0]?.policy, { canary: 1, approveWorkers: true });
    assert.deepEqual(spec.clusters[1]?.policy, { canary: 1 });
    assert.deepEqual(spec.clusters[2]?.policy, { canary: 1, batchSize: 2, maxUnavailable: '25%' });
  });

  it('every UpgradePolicy key, with its bounds', () => {
    const policy = {
      canary: 0,
      canaryNodes: ['w-1'],
      batchSize: 3,
      maxUnavailable: 2,
      order: 'inventory',
      firstControlPlane: 'cp-1',
      batchBy: 'topology.kubernetes.io/zone',
      batchOrder: ['b', 'a'],
      rebalance: true,
      approveWorkers: false,
      approveAfterCanary: false,
      phaseSoakSeconds: 300,
      workersEveryHop: true,
      acknowledge: ['kube-system/coredns'],
      drainTimeoutSeconds: 60,
      onDrainTimeout: 'quarantine',
      hostRetrySeconds: 86_400,
      kubeletTimeoutSeconds: 300,
      verifySeconds: 0,
      continueAsNewAfterEvents: 100,
      fixPrerequisites: true,
    };
    const spec = parseFleetSpec({ name: 'f', maxParallel: 3, stages: [{ clusters: [{ name: 'c1', to: '1.33.7', policy }] }] });
    assert.deepEqual(spec.clusters[0]?.policy, policy);
    assert.equal(spec.clusters[0]?.stage, 'stage-1');
    assert.equal(spec.maxParallel, 3);
    assert.deepEqual([...FLEET_POLICY_KEYS].sort(), Object.keys({ ...policy, soakSeconds: 0 }).sort());
  });
});

describe('fleet file: parseFleetSpec refuses with one line naming the entry', () => {
  const edit = (f: (d: ReturnType<typeof base> & Record<string, unknown>) => void) => {
    const d = base() as ReturnType<typeof base> & Record<string, unknown>;
    f(d);
    return d;
  };
  const rows: [string, unknown, RegExp][] = [
    ['not a mapping', ['prod'], /^fleet file: top level: must be a mapping/],
    ['no name', edit((d) => delete (d as Record<string, unknown>).name), /^fleet file: name: must be a DNS label/],
    ['a name with a slash', edit((d) => (d.name = 'prod/eu')), /name: must be a DNS label .*"prod\/eu"/],
    ['an unknown top-level key', edit((d) => (d.parallel = 2)), /^fleet file: top level: unknown key "parallel"/],
    ['maxParallel 0', edit((d) => (d.maxParallel = 0)), /^fleet file: maxParallel: must be an integer from 1 to 100, got 0/],
    ['maxParallel as text', edit((d) => (d.maxParallel = '2')), /maxParallel: must be an integer from 1 to 100, got "2"/],
    ['no stages', edit((d) => (d.stages = [])), /^fleet file: stages: must be a non-empty list/],
    [
      'a stage without clusters',
      edit((d) => (d.stages[1] = { name: 'users', clusters: [] })),
      /^fleet file: stages\[1\]\.clusters: must be a non-empty list/,
    ],
    [
      'a stage listed twice',
      edit((d) => ((d.stages[1] as { name: string }).name = 'admin')),
      /stages\[1\]\.name: stage admin is listed twice/,
    ],
    [
      'a cluster listed twice',
      edit((d) => (d.stages[1]!.clusters as unknown[]).push('admin')),
      /stages\[1\]\.clusters\[2\]\.name: cluster admin is already listed at stages\[0\]\.clusters\[0\]/,
    ],
    [
      'a bad cluster name',
      edit((d) => (d.stages[1]!.clusters as unknown[]).push('User_A')),
      /stages\[1\]\.clusters\[2\]\.name: must be a DNS label/,
    ],
    [
      'a cluster entry that is a number',
      edit((d) => (d.stages[1]!.clusters as unknown[]).push(7)),
      /stages\[1\]\.clusters\[2\]: must be a cluster name or a mapping/,
    ],
    [
      'an unknown cluster key',
      edit((d) => ((d.stages[0]!.clusters[0] as Record<string, unknown>).gate = true)),
      /stages\[0\]\.clusters\[0\]: unknown key "gate"/,
    ],
    [
      'a bad target',
      edit((d) => ((d.stages[0]!.clusters[0] as Record<string, unknown>).to = '1.34.2;reboot')),
      /stages\[0\]\.clusters\[0\]\.to: invalid target "1\.34\.2;reboot"/,
    ],
    [
      'a target expression misspelt',
      edit((d) => ((d.stages[0]!.clusters[0] as Record<string, unknown>).to = 'latest')),
      /clusters\[0\]\.to: invalid target "latest"/,
    ],
    [
      'no target and no default',
      edit((d) => delete (d.defaults as Record<string, unknown>).to),
      /stages\[1\]\.clusters\[0\]\.to: is required \(or defaults\.to\)/,
    ],
    [
      'approve not a boolean',
      edit((d) => ((d.stages[0]!.clusters[0] as Record<string, unknown>).approve = 'yes')),
      /clusters\[0\]\.approve: must be true or false, got "yes"/,
    ],
    [
      'an unknown policy key (a typo)',
      edit((d) => ((d.stages[0]!.clusters[0] as { policy: Record<string, unknown> }).policy.batchsize = 2)),
      /clusters\[0\]\.policy: unknown key "batchsize"/,
    ],
    [
      'a CLI flag name as policy key',
      edit((d) => ((d.defaults.policy as Record<string, unknown>)['host-retry'] = 5)),
      /^fleet file: defaults\.policy: unknown key "host-retry"/,
    ],
    [
      'batchSize 0',
      edit((d) => ((d.stages[0]!.clusters[0] as { policy: Record<string, unknown> }).policy.batchSize = 0)),
      /policy\.batchSize: must be an integer ≥ 1, got 0/,
    ],
    [
      'canary negative',
      edit((d) => ((d.defaults.policy as Record<string, unknown>).canary = -1)),
      /defaults\.policy\.canary: must be an integer ≥ 0, got -1/,
    ],
    [
      'a batchBy that is no label key (issue 40)',
      edit((d) => ((d.stages[0]!.clusters[0] as { policy: Record<string, unknown> }).policy.batchBy = 'zone name')),
      /clusters\[0\]\.policy\.batchBy: must be a label key .*got "zone name"/,
    ],
    [
      'a batchOrder without batchBy',
      edit((d) => ((d.stages[0]!.clusters[0] as { policy: Record<string, unknown> }).policy.batchOrder = ['a'])),
      /clusters\[0\]\.policy\.batchOrder: orders the values of batchBy: give batchBy too$/,
    ],
    [
      'maxUnavailable 0%',
      edit((d) => ((d.defaults.policy as Record<string, unknown>).maxUnavailable = '0%')),
      /maxUnavailable: must be a count ≥ 1 or a percentage from 1% to 100%, got "0%"/,
    ],
    [
      'drainTimeoutSeconds past the drain activity',
      edit((d) => ((d.defaults.policy as Record<string, unknown>).drainTimeoutSeconds = 9000)),
      /defaults\.policy\.drainTimeoutSeconds: must be an integer from 1 to 6900 \(the drain activity ends at 2 hours\), got 9000/,
    ],
    [
      'hostRetrySeconds over a day',
      edit((d) => ((d.defaults.policy as Record<string, unknown>).hostRetrySeconds = 86_401)),
      /hostRetrySeconds: must be an integer from 0 to 86400 \(a day\), got 86401/,
    ],
    [
      'soakSeconds fractional',
      edit((d) => ((d.defaults.policy as Record<string, unknown>).soakSeconds = 1.5)),
      /soakSeconds: must be an integer ≥ 0, got 1\.5/,
    ],
    [
      'acknowledge without a namespace',
      edit((d) => ((d.defaults.policy as Record<string, unknown>).acknowledge = ['coredns'])),
      /defaults\.policy\.acknowledge\[0\]: must be NAMESPACE\/PDB names or readiness acknowledgements \(<check>:<subject>\), got "coredns"/,
    ],
    [
      'order unknown',
      edit((d) => ((d.defaults.policy as Record<string, unknown>).order = 'random')),
      /order: must be "name" or "inventory"/,
    ],
    [
      'approveAfterCanary with soakSeconds (merged from defaults)',
      edit((d) => {
        (d.defaults.policy as Record<string, unknown>).soakSeconds = 60;
        (d.stages[0]!.clusters[0] as { policy: Record<string, unknown> }).policy.approveAfterCanary = true;
      }),
      /stages\[0\]\.clusters\[0\]\.policy: soakSeconds waits after the canary when no approval is asked/,
    ],
    [
      'canary 0 with a soak',
      edit((d) => Object.assign(d.defaults.policy, { canary: 0, soakSeconds: 30 })),
      /policy: canary 0 means no canary: soakSeconds would never apply/,
    ],
    [
      'a policy that is a list',
      edit((d) => ((d.stages[0]!.clusters[0] as Record<string, unknown>).policy = ['canary'])),
      /clusters\[0\]\.policy: must be a mapping of policy keys/,
    ],
  ];
  for (const [name, doc, message] of rows) {
    it(name, () =>
      assert.throws(
        () => parseFleetSpec(doc),
        (e: unknown) => {
          assert.ok(e instanceof RuleError && e.code === 'InvalidFleet', String(e));
          assert.equal(e.message.split('\n').length, 1);
          assert.match(e.message, message);
          return true;
        },
      ),
    );
  }
});

describe('fleet file: reversible and autoCommit (issue 36, rules/hop-reversibility.ts reversibleRunInput)', () => {
  const spec = (defaults: Record<string, unknown>, entry: Record<string, unknown>) => ({
    name: 'prod',
    defaults: { to: '1.34', ...defaults },
    stages: [{ name: 'all', clusters: [{ name: 'a', ...entry }, 'b'] }],
  });

  it('defaults apply to every cluster, an entry overrides them; absent or false: no trial', () => {
    const on = parseFleetSpec(spec({ reversible: true, autoCommit: true, policy: { phaseSoakSeconds: 600 } }, { autoCommit: false }));
    assert.deepEqual(on.clusters[0]?.reversible, { acknowledged: [] });
    assert.deepEqual(on.clusters[1]?.reversible, { acknowledged: [], autoCommit: true });
    const off = parseFleetSpec(spec({}, { reversible: false }));
    assert.equal(off.clusters[0]?.reversible, undefined);
    assert.equal(off.clusters[1]?.reversible, undefined);
    const one = parseFleetSpec(spec({}, { reversible: true, autoCommit: true, policy: { soakSeconds: 300 } }));
    assert.deepEqual(one.clusters[0]?.reversible, { acknowledged: [], autoCommit: true });
    assert.equal(one.clusters[1]?.reversible, undefined);
  });

  const rows: [string, unknown, RegExp][] = [
    ['reversible as text', spec({}, { reversible: 'yes' }), /^fleet file: stages\[0\]\.clusters\[0\]\.reversible: must be true or false/],
    ['defaults.autoCommit as a number', spec({ autoCommit: 1 }, {}), /^fleet file: defaults\.autoCommit: must be true or false/],
    [
      'autoCommit without reversible',
      spec({}, { autoCommit: true, policy: { soakSeconds: 60 } }),
      /^fleet file: stages\[0\]\.clusters\[0\]: stages\[0\]\.clusters\[0\]\.autoCommit goes with stages\[0\]\.clusters\[0\]\.reversible: true$/,
    ],
    [
      'autoCommit without a soak',
      spec({ reversible: true, autoCommit: true }, {}),
      /^fleet file: stages\[0\]\.clusters\[0\]: .*autoCommit needs a soak: stages\[0\]\.clusters\[0\]\.policy\.soakSeconds or phaseSoakSeconds/,
    ],
  ];
  for (const [what, doc, line] of rows)
    it(`refuses ${what}`, () => {
      assert.throws(
        () => parseFleetSpec(doc),
        (err: unknown) => err instanceof RuleError && line.test(err.message) && !err.message.includes('\n'),
      );
    });
});
