import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { alphaGatesOn, ALPHA_FEATURE_GATES, planReversibility, reversibleRefusal } from '../../rules/index.js';

// The alpha gates a control plane turns on (issue 36): a hop whose trial would run them cannot be
// reversible (KEP-4330 emulates beta and GA features only). The table itself is compared with the
// real binaries' --help in test/activities/readiness-prerequisites.test.ts.
describe('alpha feature gates: which --feature-gates are alpha at the cluster minor', () => {
  const cases: { name: string; gates: string[]; version: string; want: string[] | undefined }[] = [
    {
      name: '1.32: InPlacePodVerticalScaling and kube:MutatingAdmissionPolicy are alpha; false and beta gates are not counted',
      gates: ['InPlacePodVerticalScaling=true,kube:MutatingAdmissionPolicy=true,DRAAdminAccess=false', 'APIServerTracing=true'],
      version: '1.32.13',
      want: ['InPlacePodVerticalScaling', 'MutatingAdmissionPolicy'],
    },
    {
      name: '1.33: InPlacePodVerticalScaling is beta (kube-apiserver 1.33.13 --help)',
      gates: ['InPlacePodVerticalScaling=true'],
      version: '1.33.13',
      want: [],
    },
    {
      name: 'AllAlpha=true is named as itself, once across components',
      gates: ['AllAlpha=true', 'AllAlpha=true'],
      version: '1.33.4',
      want: ['AllAlpha'],
    },
    { name: 'TRUE in capitals, spaces around pairs', gates: [' DRAAdminAccess=TRUE '], version: '1.33.0', want: ['DRAAdminAccess'] },
    {
      name: 'a minor the table does not know: unknown (not held against the hop)',
      gates: ['AllAlpha=true'],
      version: '1.29.4',
      want: undefined,
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(alphaGatesOn(c.gates, c.version), c.want));

  it('the table covers the minors of the binaries built here', () => {
    assert.deepEqual(Object.keys(ALPHA_FEATURE_GATES).sort(), ['1.32', '1.33', '1.34']);
  });

  it('fed to the verdict: the hop cannot be reversible, the refusal names the gate and the acknowledgement', () => {
    const alpha = alphaGatesOn(['MutatingAdmissionPolicy=true'], '1.33.13');
    const [v] = planReversibility('1.33.13', ['1.34.4'], { etcd: '3.5.24', ...(alpha ? { alphaFeatureGates: alpha } : {}) });
    assert.equal(v?.reversible, false);
    assert.deepEqual(
      v?.reasons.map((r) => r.id),
      ['alpha-feature-gates'],
    );
    assert.match(
      reversibleRefusal(v ? [v] : [], []) ?? '',
      /^--reversible: hop 1\.34\.4 cannot be reversible: alpha feature gates MutatingAdmissionPolicy are on: .*acknowledge it with --acknowledge reversible:1\.34\.4/,
    );
    assert.equal(reversibleRefusal(v ? [v] : [], ['reversible:1.34.4']), undefined);
  });
});
