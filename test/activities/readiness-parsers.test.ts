import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePrometheusText } from '../../activities/readiness/prometheus-text.js';
import { parseDeprecatedAuditLines } from '../../activities/readiness/removed-api-usage.js';

// What a 1.32 apiserver's /metrics shows after one SelfSubjectReview at v1beta1 (label order and
// escaping as the Prometheus client writes them).
const METRICS = `# HELP apiserver_requested_deprecated_apis [STABLE] Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="authentication.k8s.io",removed_release="1.33",resource="selfsubjectreviews",subresource="",version="v1beta1"} 1
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="authentication.k8s.io",resource="selfsubjectreviews",scope="resource",subresource="",verb="POST",version="v1beta1"} 2
apiserver_request_total{code="403",component="apiserver",dry_run="",group="authentication.k8s.io",resource="selfsubjectreviews",scope="resource",subresource="",verb="POST",version="v1beta1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="LIST",version="v1"} 7
weird_metric{a="quote \\" inside",b="back\\\\slash"} 3 1700000000000
broken{a="no end} 1
`;

describe('readiness parsers: Prometheus text and audit lines', () => {
  it('reads the samples it is asked for, with their labels and values', () => {
    const deprecated = parsePrometheusText(METRICS, ['apiserver_requested_deprecated_apis']);
    assert.deepEqual(deprecated, [
      {
        name: 'apiserver_requested_deprecated_apis',
        labels: {
          group: 'authentication.k8s.io',
          removed_release: '1.33',
          resource: 'selfsubjectreviews',
          subresource: '',
          version: 'v1beta1',
        },
        value: 1,
      },
    ]);
    const totals = parsePrometheusText(METRICS, ['apiserver_request_total']);
    assert.deepEqual(
      totals.map((s) => `${s.labels.group}/${s.labels.resource} ${s.labels.code} ${s.value}`),
      ['authentication.k8s.io/selfsubjectreviews 201 2', 'authentication.k8s.io/selfsubjectreviews 403 1', '/pods 200 7'],
    );
  });

  it('unescapes label values, keeps a timestamped sample, skips a malformed line', () => {
    const all = parsePrometheusText(METRICS);
    assert.deepEqual(all.find((s) => s.name === 'weird_metric')?.labels, { a: 'quote " inside', b: 'back\\slash' });
    assert.equal(all.find((s) => s.name === 'weird_metric')?.value, 3);
    assert.equal(
      all.find((s) => s.name === 'broken'),
      undefined,
    );
  });

  it('names the client of each deprecated request in a JSON audit log; skips others and half-written lines', () => {
    const event = (over: Record<string, unknown>) =>
      JSON.stringify({
        kind: 'Event',
        level: 'Metadata',
        verb: 'create',
        user: { username: 'ci-bot', groups: ['system:authenticated'] },
        userAgent: 'old-tool/1.0',
        objectRef: { resource: 'selfsubjectreviews', apiGroup: 'authentication.k8s.io', apiVersion: 'v1beta1' },
        annotations: { 'authorization.k8s.io/decision': 'allow', 'k8s.io/deprecated': 'true', 'k8s.io/removed-release': '1.33' },
        ...over,
      });
    const text = [
      event({}),
      event({ annotations: { 'authorization.k8s.io/decision': 'allow' } }),
      event({ objectRef: { resource: 'componentstatuses', apiVersion: 'v1' }, annotations: { 'k8s.io/deprecated': 'true' } }),
      '{"kind":"Event","annotations":{"k8s.io/deprecated":"true"',
      '',
    ].join('\n');
    assert.deepEqual(parseDeprecatedAuditLines(text), [
      {
        group: 'authentication.k8s.io',
        version: 'v1beta1',
        resource: 'selfsubjectreviews',
        subresource: '',
        removedRelease: '1.33',
        user: 'ci-bot',
        userAgent: 'old-tool/1.0',
      },
      {
        group: '',
        version: 'v1',
        resource: 'componentstatuses',
        subresource: '',
        removedRelease: '',
        user: 'ci-bot',
        userAgent: 'old-tool/1.0',
      },
    ]);
  });
});
