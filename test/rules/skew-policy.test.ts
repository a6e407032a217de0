import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkSkew, maxNodeLag, RuleError, type SkewInventory, type SkewRuleId } from '../../rules/index.js';

const at = (node: string, version: string) => ({ node, version });

interface Case {
  name: string;
  inventory: SkewInventory;
  topology?: 'any' | 'kubeadm';
  /** Expected violations as `component/node/ruleId`; empty means compliant. */
  expect: string[];
}

const single = (v: string) => ({ apiservers: [at('cp1', v)] });

const cases: Case[] = [
  // kube-apiserver (HA)
  { name: 'HA apiservers one minor apart', inventory: { apiservers: [at('cp1', '1.34.1'), at('cp2', '1.33.5')] }, expect: [] },
  {
    name: 'HA apiservers two minors apart',
    inventory: { apiservers: [at('cp1', '1.34.1'), at('cp2', '1.33.5'), at('cp3', '1.32.0')] },
    expect: ['apiserver/cp3/apiserver-ha-skew'],
  },
  {
    name: 'HA apiservers at different patches of one minor',
    inventory: { apiservers: [at('cp1', '1.34.1'), at('cp2', '1.34.9')] },
    expect: [],
  },

  // kubelet and kube-proxy: not newer than A_old, at most 3 older than A_new (2 before 1.28)
  { name: 'kubelet at the apiserver minor', inventory: { ...single('1.34.0'), kubelets: [at('w1', '1.34.0')] }, expect: [] },
  { name: 'kubelet newer by patch only', inventory: { ...single('1.34.0'), kubelets: [at('w1', '1.34.7')] }, expect: [] },
  {
    name: 'kubelet one minor newer',
    inventory: { ...single('1.34.0'), kubelets: [at('w1', '1.35.0')] },
    expect: ['kubelet/w1/node-newer-than-apiserver'],
  },
  { name: 'kubelet 3 minors older (n-3, apiserver 1.34)', inventory: { ...single('1.34.2'), kubelets: [at('w1', '1.31.9')] }, expect: [] },
  {
    name: 'kubelet 4 minors older',
    inventory: { ...single('1.34.2'), kubelets: [at('w1', '1.30.14')] },
    expect: ['kubelet/w1/node-too-old'],
  },
  {
    name: 'kubelet newer than the OLDEST apiserver in HA',
    inventory: { apiservers: [at('cp1', '1.34.1'), at('cp2', '1.33.5')], kubelets: [at('w1', '1.34.1')] },
    expect: ['kubelet/w1/node-newer-than-apiserver'],
  },
  {
    name: 'kubelet lag counted from the NEWEST apiserver in HA',
    inventory: { apiservers: [at('cp1', '1.34.1'), at('cp2', '1.33.5')], kubelets: [at('w1', '1.30.0')] },
    expect: ['kubelet/w1/node-too-old'],
  },
  {
    name: 'kube-proxy newer than apiserver',
    inventory: { ...single('1.33.0'), kubeProxies: [at('w1', '1.34.0')] },
    expect: ['kubeProxy/w1/node-newer-than-apiserver'],
  },
  {
    name: 'kube-proxy 4 minors older',
    inventory: { ...single('1.34.0'), kubeProxies: [at('w1', '1.30.0')] },
    expect: ['kubeProxy/w1/node-too-old'],
  },
  { name: 'kube-proxy 3 minors older', inventory: { ...single('1.34.0'), kubeProxies: [at('w1', '1.31.0')] }, expect: [] },

  // the 1.28 boundary: n-3 from apiserver 1.28, n-2 before
  { name: 'apiserver 1.28, kubelet 1.25 (n-3 allowed)', inventory: { ...single('1.28.0'), kubelets: [at('w1', '1.25.16')] }, expect: [] },
  {
    name: 'apiserver 1.27, kubelet 1.24 (n-3 refused)',
    inventory: { ...single('1.27.9'), kubelets: [at('w1', '1.24.17')] },
    expect: ['kubelet/w1/node-too-old'],
  },
  { name: 'apiserver 1.27, kubelet 1.25 (n-2 allowed)', inventory: { ...single('1.27.9'), kubelets: [at('w1', '1.25.0')] }, expect: [] },
  {
    name: 'apiserver 1.27, kube-proxy 1.24 (n-3 refused)',
    inventory: { ...single('1.27.0'), kubeProxies: [at('w1', '1.24.0')] },
    expect: ['kubeProxy/w1/node-too-old'],
  },
  {
    name: 'HA 1.28+1.27: lag follows the newest (1.28), so n-3 from 1.28',
    inventory: { apiservers: [at('cp1', '1.28.0'), at('cp2', '1.27.3')], kubelets: [at('w1', '1.25.0')] },
    expect: [],
  },

  // kube-controller-manager and kube-scheduler: not newer than A_old, at most 1 older than A_new
  {
    name: 'controller-manager at apiserver minor',
    inventory: { ...single('1.34.0'), controllerManagers: [at('cp1', '1.34.3')] },
    expect: [],
  },
  { name: 'controller-manager one minor older', inventory: { ...single('1.34.0'), controllerManagers: [at('cp1', '1.33.3')] }, expect: [] },
  {
    name: 'controller-manager two minors older',
    inventory: { ...single('1.34.0'), controllerManagers: [at('cp1', '1.32.3')] },
    expect: ['controllerManager/cp1/control-plane-too-old'],
  },
  {
    name: 'scheduler one minor newer',
    inventory: { ...single('1.33.0'), schedulers: [at('cp1', '1.34.0')] },
    expect: ['scheduler/cp1/control-plane-newer-than-apiserver'],
  },
  {
    name: 'scheduler newer than the oldest HA apiserver (any topology)',
    inventory: { apiservers: [at('cp1', '1.34.0'), at('cp2', '1.33.0')], schedulers: [at('cp1', '1.34.0')] },
    expect: ['scheduler/cp1/control-plane-newer-than-apiserver'],
  },
  {
    name: "same, kubeadm topology: bounded by its own node's apiserver",
    topology: 'kubeadm',
    inventory: {
      apiservers: [at('cp1', '1.34.0'), at('cp2', '1.33.0')],
      schedulers: [at('cp1', '1.34.0'), at('cp2', '1.33.0')],
      controllerManagers: [at('cp1', '1.34.0')],
    },
    expect: [],
  },
  {
    name: "kubeadm topology: newer than its own node's apiserver",
    topology: 'kubeadm',
    inventory: { apiservers: [at('cp1', '1.34.0'), at('cp2', '1.33.0')], controllerManagers: [at('cp2', '1.34.0')] },
    expect: ['controllerManager/cp2/control-plane-newer-than-apiserver'],
  },
  {
    name: 'kubeadm topology, no apiserver on its node: the table applies',
    topology: 'kubeadm',
    inventory: { apiservers: [at('cp1', '1.34.0'), at('cp2', '1.33.0')], controllerManagers: [at('elsewhere', '1.34.0')] },
    expect: ['controllerManager/elsewhere/control-plane-newer-than-apiserver'],
  },

  // kubectl: within one minor of every apiserver, either direction
  { name: 'kubectl one minor newer', inventory: { ...single('1.34.0'), kubectl: [at('laptop', '1.35.0')] }, expect: [] },
  { name: 'kubectl one minor older', inventory: { ...single('1.34.0'), kubectl: [at('laptop', '1.33.0')] }, expect: [] },
  {
    name: 'kubectl two minors newer',
    inventory: { ...single('1.34.0'), kubectl: [at('laptop', '1.36.0')] },
    expect: ['kubectl/laptop/kubectl-skew'],
  },
  {
    name: 'kubectl two minors older',
    inventory: { ...single('1.34.0'), kubectl: [at('laptop', '1.32.0')] },
    expect: ['kubectl/laptop/kubectl-skew'],
  },
  {
    name: 'kubectl 1.34 with HA 1.34+1.33 is fine',
    inventory: { apiservers: [at('cp1', '1.34.0'), at('cp2', '1.33.0')], kubectl: [at('laptop', '1.34.0')] },
    expect: [],
  },
  {
    name: 'kubectl 1.35 with HA 1.34+1.33 is two from the oldest',
    inventory: { apiservers: [at('cp1', '1.34.0'), at('cp2', '1.33.0')], kubectl: [at('laptop', '1.35.0')] },
    expect: ['kubectl/laptop/kubectl-skew'],
  },

  // majors never mix
  {
    name: 'kubelet of another major',
    inventory: { ...single('1.34.0'), kubelets: [at('w1', '2.34.0')] },
    expect: ['kubelet/w1/node-newer-than-apiserver'],
  },

  // every violation is kept
  {
    name: 'several violations at once',
    inventory: {
      ...single('1.34.0'),
      kubelets: [at('w1', '1.35.0'), at('w2', '1.29.0'), at('w3', '1.34.0')],
      kubectl: [at('l', '1.31.0')],
    },
    expect: ['kubelet/w1/node-newer-than-apiserver', 'kubelet/w2/node-too-old', 'kubectl/l/kubectl-skew'],
  },
];

describe('checkSkew: the version skew policy table', () => {
  for (const c of cases) {
    it(c.name, () => {
      const report = checkSkew(c.inventory, c.topology ? { topology: c.topology } : {});
      const got = report.violations.map((v) => `${v.component}/${v.node}/${v.ruleId satisfies SkewRuleId}`);
      assert.deepEqual(got, c.expect);
      assert.equal(report.compliant, c.expect.length === 0);
    });
  }

  it('names the rule and the versions in each violation', () => {
    const [v] = checkSkew({ apiservers: [at('cp1', '1.34.0'), at('cp2', '1.33.2')], kubelets: [at('w1', 'v1.34.1')] }).violations;
    assert.equal(v?.version, '1.34.1');
    assert.match(v?.rule ?? '', /kubelet must not be newer than the oldest kube-apiserver \(1\.33\)/);
    const [old] = checkSkew({ apiservers: [at('cp1', '1.27.0')], kubelets: [at('w1', '1.24.0')] }).violations;
    assert.match(old?.rule ?? '', /at most 2 minors older .*1\.27.*1\.28/);
  });

  it('allows n-3 exactly from 1.28', () => {
    assert.equal(maxNodeLag({ major: 1, minor: 27 }), 2);
    assert.equal(maxNodeLag({ major: 1, minor: 28 }), 3);
  });
});

describe('checkSkew: bad input', () => {
  const bad: [string, unknown, RegExp][] = [
    ['no apiservers', {}, /apiservers must be an array|at least one/],
    ['empty apiservers', { apiservers: [] }, /at least one kube-apiserver/],
    ['apiservers not a list', { apiservers: 'cp1' }, /apiservers must be an array/],
    ['entry without node', { apiservers: [{ version: '1.34.0' }] }, /apiservers\[0\] must be/],
    [
      'bad version names the entry',
      { apiservers: [at('cp1', '1.34.0')], kubelets: [at('w7', '1.34')] },
      /kubelets\[0\] \(w7\): invalid Kubernetes version "1\.34"/,
    ],
    ['not an object', null, /must be a JSON object/],
  ];
  for (const [name, input, message] of bad) {
    it(name, () =>
      assert.throws(
        () => checkSkew(input as SkewInventory),
        (err: unknown) => err instanceof RuleError && err.code === 'InvalidInventory' && message.test(err.message),
      ),
    );
  }
});
