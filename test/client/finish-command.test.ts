// A run's finish command (rules/upgrade-command.ts) is one the CLI takes back: its flags parse, through
// the CLI's own policy flags, to the policy the run was started with, and it names a task queue that
// is not the default one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseOptions } from '../../client/cli-support.js';
import { POLICY_OPTIONS, policyFromFlags } from '../../client/policy-flags.js';
import { START_OPTIONS } from '../../client/start-and-follow.js';
import { upgradeCommand, type Policy } from '../../rules/index.js';

/** The command's words as a shell splits them (single quotes only, as upgradeCommand writes them). */
const shellWords = (line: string) => [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] ?? m[2]!).replace(/'\\''/g, "'"));

const CASES: { name: string; policy: Policy; taskQueue: string; expected: string }[] = [
  { name: 'the default queue and no policy', policy: {}, taskQueue: 'skewless', expected: 'skewless upgrade --cluster lab --to 1.33' },
  {
    name: "a site's own queue and gates",
    policy: { approveWorkers: true, approveAfterCanary: true, batchSize: 2 },
    taskQueue: 'site-a',
    expected: 'skewless upgrade --cluster lab --to 1.33 --task-queue site-a --approve-workers --approve-canary --batch-size 2',
  },
  {
    name: 'drain timeout, quarantine and acknowledgements',
    policy: {
      drainTimeoutSeconds: 300,
      onDrainTimeout: 'quarantine',
      maxUnavailable: '25%',
      acknowledge: ['payments/pdb', 'removed-api:flowcontrol.apiserver.k8s.io/v1beta3/flowschemas'],
    },
    taskQueue: 'skewless',
    expected:
      'skewless upgrade --cluster lab --to 1.33 --drain-timeout 300 --on-drain-timeout quarantine --max-unavailable 25% ' +
      '--acknowledge payments/pdb --acknowledge removed-api:flowcontrol.apiserver.k8s.io/v1beta3/flowschemas',
  },
  {
    name: 'batches by zone in an order, rebalanced (issue 40)',
    policy: { batchBy: 'topology.kubernetes.io/zone', batchOrder: ['b', 'a'], rebalance: true },
    taskQueue: 'skewless',
    expected: 'skewless upgrade --cluster lab --to 1.33 --batch-by topology.kubernetes.io/zone --batch-order b,a --rebalance',
  },
];

describe('the finish command repeats the run: its task queue and its policy, in flags the CLI takes', () => {
  for (const c of CASES)
    it(c.name, () => {
      const line = upgradeCommand({ cluster: 'lab', to: '1.33', policy: c.policy, taskQueue: c.taskQueue });
      assert.equal(line, c.expected);
      const { values } = parseOptions(shellWords(line).slice(2), {
        cluster: { type: 'string' },
        to: { type: 'string' },
        ...POLICY_OPTIONS,
        ...START_OPTIONS,
      });
      assert.deepEqual(policyFromFlags(values), c.policy);
      assert.equal(values['task-queue'], c.taskQueue === 'skewless' ? undefined : c.taskQueue);
    });

  it('a value with a space is quoted for the shell', () => {
    assert.equal(
      upgradeCommand({ cluster: 'lab', to: '1.33', taskQueue: "a b'c" }),
      `skewless upgrade --cluster lab --to 1.33 --task-queue 'a b'\\''c'`,
    );
  });
});
