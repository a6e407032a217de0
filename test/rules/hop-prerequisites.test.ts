import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cgroupOfStat,
  checkHopPrerequisites,
  HOP_PREREQUISITES,
  neededChecks,
  type NodePrerequisiteFacts,
  type PrerequisiteFacts,
} from '../../rules/readiness/hop-prerequisites.js';
import { acknowledgementNameProblem } from '../../rules/readiness/finding.js';

const NOW = '2026-12-02T08:00:00Z';
const facts = (nodes: NodePrerequisiteFacts[], over: Partial<PrerequisiteFacts> = {}): PrerequisiteFacts => ({
  nodes,
  now: NOW,
  runSeconds: 6 * 3600,
  ...over,
});
const cp = (over: Partial<NodePrerequisiteFacts> = {}): NodePrerequisiteFacts => ({ name: 'cp-1', role: 'control-plane', ...over });
const worker = (over: Partial<NodePrerequisiteFacts> = {}): NodePrerequisiteFacts => ({ name: 'w-1', role: 'worker', ...over });
const cert = (name: string, expirationDate: string, over = {}) => ({ name, expirationDate, ...over });

/** [case, hops, facts, expected findings as `check severity hop node ack`] */
const CASES: [string, string[], PrerequisiteFacts, string[]][] = [
  [
    'etcd 3.5.24 before the 1.34 hop holds',
    ['1.34'],
    facts([cp({ etcdImageTag: '3.5.24-0' })]),
    ['etcd-version hold 1.34 cp-1 etcd-version:cp-1'],
  ],
  ['etcd 3.5.24 is fine for a 1.33 hop (kubeadm 1.33 keeps 3.5)', ['1.33'], facts([cp({ etcdImageTag: '3.5.24-0' })]), []],
  ['etcd 3.5.26 is the minimum and passes', ['1.34'], facts([cp({ etcdImageTag: '3.5.26-0' })]), []],
  ['etcd 3.6 passes', ['1.34'], facts([cp({ etcdImageTag: '3.6.4-0' })]), []],
  [
    'etcd: the first hop that brings 3.6 is named, not every later one',
    ['1.33', '1.34', '1.35'],
    facts([cp({ etcdImageTag: '3.5.16-0' })]),
    ['etcd-version hold 1.34 cp-1 etcd-version:cp-1'],
  ],
  [
    'an etcd tag that is no version warns',
    ['1.34'],
    facts([cp({ etcdImageTag: 'latest' })]),
    ['etcd-version warn 1.34 cp-1 etcd-version:cp-1'],
  ],
  ['a worker has no etcd member', ['1.34'], facts([worker({ etcdImageTag: '3.5.1-0' })]), []],
  [
    'cgroup v1 before 1.35 holds, v2 does not',
    ['1.35'],
    facts([cp({ cgroup: cgroupOfStat('cgroup2fs\n') }), worker({ cgroup: cgroupOfStat('tmpfs\n') })]),
    ['cgroup-v1 hold 1.35 w-1 cgroup-v1:w-1'],
  ],
  ['cgroup v1 is fine before a 1.34 hop', ['1.34'], facts([worker({ cgroup: cgroupOfStat('tmpfs') })]), []],
  [
    'an unknown file system type warns',
    ['1.36'],
    facts([worker({ cgroup: cgroupOfStat('ext2/ext3') })]),
    ['cgroup-v1 warn 1.36 w-1 cgroup-v1:w-1'],
  ],
  [
    'containerd 1.7 before 1.36 holds; 2.1 and CRI-O do not',
    ['1.36'],
    facts([
      worker({ containerRuntimeVersion: 'containerd://1.7.24' }),
      worker({ name: 'w-2', containerRuntimeVersion: 'containerd://2.1.4' }),
      worker({ name: 'w-3', containerRuntimeVersion: 'cri-o://1.33.0' }),
    ]),
    ['containerd-1 hold 1.36 w-1 containerd-1:w-1'],
  ],
  ['containerd 1.7 is supported through 1.35', ['1.35'], facts([worker({ containerRuntimeVersion: 'containerd://1.7.24' })]), []],
  [
    'a v1beta3 ClusterConfiguration holds the hop to 1.36',
    ['1.35', '1.36'],
    facts([], { kubeadmConfigApiVersion: 'kubeadm.k8s.io/v1beta3' }),
    ['kubeadm-config-api hold 1.36 - kubeadm-config-api:kube-system/kubeadm-config'],
  ],
  [
    'v1beta3 before 1.35 is migrated by upgrade apply itself',
    ['1.34'],
    facts([], { kubeadmConfigApiVersion: 'kubeadm.k8s.io/v1beta3' }),
    [],
  ],
  ['v1beta4 passes', ['1.36'], facts([], { kubeadmConfigApiVersion: 'kubeadm.k8s.io/v1beta4' }), []],
  [
    'a certificate expiring inside the run holds; one after it, an externally managed one do not',
    ['1.33'],
    facts([
      cp({
        certificates: [
          cert('apiserver', '2026-12-02T12:00:00Z'),
          cert('admin.conf', '2027-06-01T00:00:00Z'),
          cert('front-proxy-client', '2026-12-01T00:00:00Z', { externallyManaged: true }),
        ],
      }),
    ]),
    ['cert-expiry hold 1.33 cp-1 cert-expiry:cp-1/apiserver'],
  ],
  [
    'a shorter run passes the same certificate',
    ['1.33'],
    facts([cp({ certificates: [cert('apiserver', '2026-12-02T12:00:00Z')] })], { runSeconds: 3600 }),
    [],
  ],
  [
    'an expired CA and a missing certificate hold',
    ['1.33', '1.34'],
    facts([
      cp({
        certificates: [
          cert('ca', '2026-11-30T00:00:00Z', { authority: true }),
          cert('etcd-server', '0001-01-01T00:00:00Z', { missing: true }),
        ],
      }),
    ]),
    ['cert-expiry hold 1.33 cp-1 cert-expiry:cp-1/ca', 'cert-expiry hold 1.33 cp-1 cert-expiry:cp-1/etcd-server'],
  ],
  [
    'certificates that could not be read warn',
    ['1.33'],
    facts([cp({ certificates: { error: 'exit 1' } })]),
    ['cert-expiry warn 1.33 cp-1 cert-expiry:cp-1'],
  ],
  [
    'each hop whose repository a node cannot reach holds that hop',
    ['1.33', '1.34'],
    facts([
      worker({ repositories: { '1.33': { reachable: true }, '1.34': { reachable: false, detail: '404' } } }),
      worker({ name: 'w-2', repositories: { '1.33': { reachable: false }, '1.34': { reachable: false } } }),
    ]),
    [
      'repository hold 1.33 w-2 repository:w-2/1.33',
      'repository hold 1.34 w-1 repository:w-1/1.34',
      'repository hold 1.34 w-2 repository:w-2/1.34',
    ],
  ],
  [
    'a node that did not answer SSH says nothing of its repository: a warning (its step waits for the operator), not a hold',
    ['1.33'],
    facts([worker({ repositories: { '1.33': { reachable: false, unknown: true, detail: 'host w-1 unreachable: ECONNREFUSED' } } })]),
    ['repository warn 1.33 w-1 repository:w-1/1.33'],
  ],
  [
    'a hop given as a version is judged by its minor',
    ['1.34.4'],
    facts([cp({ etcdImageTag: '3.5.24-0' })]),
    ['etcd-version hold 1.34.4 cp-1 etcd-version:cp-1'],
  ],
  ['no hops, no findings', [], facts([cp({ etcdImageTag: '3.5.1-0', cgroup: cgroupOfStat('tmpfs') })]), []],
];

const line = (f: { check: string; severity: string; hop: string; node?: string; ack: string }) =>
  `${f.check} ${f.severity} ${f.hop} ${f.node ?? '-'} ${f.ack}`;

describe('rules: the prerequisites of a hop that are not skew rules', () => {
  for (const [name, hops, input, expected] of CASES) {
    it(name, () => {
      const found = checkHopPrerequisites(hops, input);
      assert.deepEqual(found.map(line).sort(), [...expected].sort());
      for (const f of found) {
        assert.equal(acknowledgementNameProblem(f.ack), undefined, `${f.ack} is a well-formed acknowledgement`);
        assert.ok(f.what.length > 0 && f.todo.length > 0 && f.source.length > 0, 'each finding says what, what to do and where from');
        if (f.node) assert.match(f.what, new RegExp(f.node), 'the finding names its node');
      }
    });
  }

  it('every row cites a source, says how it is probed and from which minor it applies', () => {
    assert.deepEqual(
      HOP_PREREQUISITES.map((r) => [r.check, r.from ?? 'every hop', r.probe]),
      [
        ['etcd-version', '1.34', 'api'],
        ['cgroup-v1', '1.35', 'ssh'],
        ['containerd-1', '1.36', 'api'],
        ['kubeadm-config-api', '1.36', 'api'],
        ['cert-expiry', 'every hop', 'ssh'],
        ['repository', 'every hop', 'ssh'],
      ],
    );
    for (const r of HOP_PREREQUISITES) assert.match(r.source, /^(https:\/\/|kubernetes\/)/);
  });

  it('probes only what the hops need', () => {
    assert.deepEqual([...neededChecks(['1.33'])].sort(), ['cert-expiry', 'repository']);
    assert.deepEqual([...neededChecks(['1.33', '1.34'])].sort(), ['cert-expiry', 'etcd-version', 'repository']);
    assert.deepEqual([...neededChecks(['1.36'])].sort(), [
      'cert-expiry',
      'cgroup-v1',
      'containerd-1',
      'etcd-version',
      'kubeadm-config-api',
      'repository',
    ]);
    assert.equal(neededChecks([]).size, 0);
  });

  it('bad input is a one-line RuleError', () => {
    assert.throws(() => checkHopPrerequisites(['next'], facts([])), { name: 'RuleError', message: /invalid hop "next"/ });
    assert.throws(() => checkHopPrerequisites(['1.34'], facts([], { now: 'yesterday' })), { name: 'RuleError', message: /invalid now/ });
    assert.throws(() => checkHopPrerequisites(['1.34'], facts([], { runSeconds: -1 })), {
      name: 'RuleError',
      message: /invalid runSeconds/,
    });
  });
});
