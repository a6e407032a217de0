import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acknowledgementNameProblem } from '../../rules/readiness/finding.js';
import {
  REMOVED_APIS,
  hopRemoves,
  removalsCrossed,
  removedApiFindings,
  removedApiFindingsForHops,
  type DeprecatedApiRequest,
} from '../../rules/readiness/removed-apis.js';

const request = (over: Partial<DeprecatedApiRequest>): DeprecatedApiRequest => ({
  group: 'authentication.k8s.io',
  version: 'v1beta1',
  resource: 'selfsubjectreviews',
  subresource: '',
  removedRelease: '1.33',
  clients: [],
  ...over,
});
const none = { requested: [], storedNotServed: [] };

describe('rules: removed APIs per minor', () => {
  it('every row cites a source and names a plural resource; no row twice', () => {
    const seen = new Set<string>();
    for (const r of REMOVED_APIS) {
      assert.match(r.source, /^https:\/\//, `${r.group}/${r.version}/${r.resource}`);
      assert.match(r.resource, /^[a-z]+s$/, r.resource);
      assert.match(r.removedIn, /^1\.\d+$/);
      const key = `${r.group}/${r.version}/${r.resource}`;
      assert.ok(!seen.has(key), `${key} twice`);
      seen.add(key);
    }
  });

  const crossing: { from: string; to: string; removedIn: string; crosses: boolean }[] = [
    { from: '1.32', to: '1.33', removedIn: '1.33', crosses: true },
    { from: '1.32.13', to: '1.33.7', removedIn: '1.33', crosses: true },
    { from: '1.32', to: '1.33', removedIn: '1.34', crosses: false },
    { from: '1.33', to: '1.34', removedIn: '1.33', crosses: false }, // already gone before the hop
    { from: '1.32', to: '1.34', removedIn: '1.34', crosses: true },
    { from: '1.21', to: '1.22', removedIn: '1.22', crosses: true },
    { from: '1.9', to: '1.10', removedIn: '1.10', crosses: true }, // minors compare as numbers, not text
    { from: '1.32', to: '1.33', removedIn: '', crosses: false }, // no planned removal
    { from: 'x', to: '1.33', removedIn: '1.33', crosses: false },
  ];
  for (const c of crossing) {
    it(`hop ${c.from} → ${c.to} ${c.crosses ? 'crosses' : 'does not cross'} a removal in ${c.removedIn || '(none)'}`, () => {
      assert.equal(hopRemoves(c.from, c.to, c.removedIn), c.crosses);
    });
  }

  it('the rows a hop crosses: the guide has none for 1.33, the lifecycle data has selfsubjectreviews', () => {
    assert.deepEqual(
      removalsCrossed('1.32', '1.33').map((r) => `${r.group}/${r.version}/${r.resource}`),
      ['authentication.k8s.io/v1beta1/selfsubjectreviews'],
    );
    assert.deepEqual(
      removalsCrossed('1.31', '1.32').map((r) => r.resource),
      ['flowschemas', 'prioritylevelconfigurations'],
    );
    assert.ok(removalsCrossed('1.33', '1.34').some((r) => r.resource === 'validatingadmissionpolicies'));
    assert.deepEqual(removalsCrossed('1.34', '1.35'), []);
  });

  const findingCases: {
    name: string;
    hop: { from: string; to: string };
    requested: DeprecatedApiRequest[];
    held: string[];
    what?: RegExp;
  }[] = [
    {
      name: 'an API the hop removes, with its clients and count',
      hop: { from: '1.32.13', to: '1.33.7' },
      requested: [request({ count: 3, clients: [{ user: 'ci-bot', userAgent: 'old-tool/1.0', count: 3 }] })],
      held: ['removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews'],
      what: /^authentication\.k8s\.io\/v1beta1\/selfsubjectreviews requested 3 times since the apiservers started, removed in 1\.33; by ci-bot \(old-tool\/1\.0, 3 times in the audit log read\)$/,
    },
    {
      name: 'an API removed by a later hop holds nothing now',
      hop: { from: '1.32', to: '1.33' },
      requested: [request({ group: 'admissionregistration.k8s.io', resource: 'validatingadmissionpolicies', removedRelease: '1.34' })],
      held: [],
    },
    {
      name: 'a deprecated API with no planned removal holds nothing',
      hop: { from: '1.32', to: '1.33' },
      requested: [request({ removedRelease: '', resource: 'somethingnew' })],
      held: [],
    },
    {
      name: 'no removed_release label: the table decides',
      hop: { from: '1.33', to: '1.34' },
      requested: [request({ group: 'resource.k8s.io', version: 'v1alpha3', resource: 'resourceclaims', removedRelease: '' })],
      held: ['removed-api:resource.k8s.io/v1alpha3/resourceclaims'],
      what: /clients unknown/,
    },
    {
      name: 'a subresource is named in what, not in the acknowledgement',
      hop: { from: '1.33', to: '1.34' },
      requested: [
        request({
          group: 'admissionregistration.k8s.io',
          resource: 'validatingadmissionpolicies',
          subresource: 'status',
          removedRelease: '1.34',
        }),
      ],
      held: ['removed-api:admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies'],
      what: /validatingadmissionpolicies\/status requested,/,
    },
    {
      name: 'the core group is written core',
      hop: { from: '1.40', to: '1.41' },
      requested: [request({ group: '', version: 'v1', resource: 'componentstatuses', removedRelease: '1.41' })],
      held: ['removed-api:core/v1/componentstatuses'],
    },
  ];
  for (const c of findingCases) {
    it(`finding: ${c.name}`, () => {
      const findings = removedApiFindings(c.hop, { requested: c.requested, storedNotServed: [] });
      assert.deepEqual(
        findings.map((f) => f.ack),
        c.held,
      );
      for (const f of findings) {
        assert.equal(f.check, 'removed-api');
        assert.equal(f.severity, 'hold');
        assert.equal(f.hop, c.hop.to.split('.').slice(0, 2).join('.'));
        assert.equal(acknowledgementNameProblem(f.ack), undefined, f.ack);
        if (c.what) assert.match(f.what, c.what);
      }
    });
  }

  it('a CRD version stored but not served holds the first hop only', () => {
    const usage = {
      ...none,
      storedNotServed: [{ crd: 'widgets.example.com', group: 'example.com', resource: 'widgets', version: 'v1alpha1' }],
    };
    const findings = removedApiFindingsForHops('1.32', ['1.33', '1.34'], usage);
    assert.equal(findings.length, 1);
    assert.equal(findings[0]?.hop, '1.33');
    assert.equal(findings[0]?.ack, 'removed-api:example.com/v1alpha1/widgets');
    assert.match(findings[0]?.what ?? '', /widgets\.example\.com .*v1alpha1/);
  });

  it('each hop of a plan gets the removals it crosses', () => {
    const usage = {
      storedNotServed: [],
      requested: [
        request({}),
        request({ group: 'admissionregistration.k8s.io', resource: 'validatingadmissionpolicybindings', removedRelease: '1.34' }),
      ],
    };
    assert.deepEqual(
      removedApiFindingsForHops('1.32.13', ['1.33', '1.34'], usage).map((f) => `${f.hop} ${f.ack}`),
      [
        '1.33 removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews',
        '1.34 removed-api:admissionregistration.k8s.io/v1beta1/validatingadmissionpolicybindings',
      ],
    );
    assert.deepEqual(
      removedApiFindingsForHops('1.33.0', ['1.34'], usage).map((f) => f.hop),
      ['1.34'],
    );
  });
});
