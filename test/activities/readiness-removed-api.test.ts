// The removed-API check of issue 21 against the real 1.32 apiservers of a per-node simulated control
// plane: a client of this test calls authentication.k8s.io/v1beta1 SelfSubjectReview (served by 1.32
// with --runtime-config, removed in 1.33), and readinessReport, as the worker, names it and its client
// from each apiserver's /metrics and audit log (read over SSH), and a CRD version stored but no longer served.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { before, describe, it } from 'node:test';
import { createClusterResolver } from '../../activities/host-address.js';
import { createActivities } from '../../activities/index.js';
import { hostCommands } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';
import { isReadOnlyHostCommand } from '../helpers/cluster-writes.js';

const DESCRIPTION = `
name: legacy
version: 1.32.13
repository: [1.32.13, 1.33.13]
controlPlane: per-node
rebootSeconds: 1
nodes:
  - {name: cp, role: control-plane, count: 2}
  - {name: worker, role: worker, count: 1}
`;
const SSR = 'removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews';
const AGENT = 'legacy-operator/0.9';

describe('readinessReport: removed APIs in use, on real 1.32 apiservers', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createActivities>;
  const cmds = hostCommands(() => tc);
  before(async () => {
    acts = createActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });

  /** A request as the simulation's admin (CN=skewless-sim-admin) with a user agent of its own, on a new connection. */
  const admin = (method: string, path: string, body?: unknown, userAgent = AGENT) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const cp = tc.sim.controlPlane;
      const req = request(
        new URL(path, tc.sim.server),
        {
          method,
          agent: false,
          ca: readFileSync(cp.pki.caCert),
          cert: readFileSync(cp.pki.adminCert),
          key: readFileSync(cp.pki.adminKey),
          headers: {
            'User-Agent': userAgent,
            'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });

  it('finds nothing on a cluster whose clients call no removed API, and reads every control plane', async () => {
    const report = await acts.readinessReport({ cluster: 'legacy', from: '1.32.13', hops: ['1.33.13'] });
    assert.deepEqual(report.findings, []);
    assert.deepEqual(report.problems, []);
    assert.equal(report.looked.removedApis.metricsScrapes, 2);
    assert.deepEqual(report.looked.removedApis.auditLogsRead.sort(), [
      'cp-1:/var/log/kubernetes/audit/audit.log',
      'cp-2:/var/log/kubernetes/audit/audit.log',
    ]);
  });

  it('holds 1.32 → 1.33 on a SelfSubjectReview at v1beta1, naming its client; not 1.33 → 1.34', async () => {
    // Every connection to cp-1's apiserver for the call and the report's scrapes: one call is one
    // request however often the same apiserver is scraped (it read "2 times" beside "1 time").
    const cp = tc.sim.controlPlane;
    assert.equal(cp.mode, 'per-node');
    const ports = [...cp.nodes.values()].map((n) => n.apiserverPort);
    cp.balancer.setBackends([cp.nodes.get('cp-1')?.apiserverPort as number]);
    const onCp1 = async () => {
      try {
        // The real 1.32 apiserver serves it (the simulation's --runtime-config) and warns it is deprecated.
        const ssr = await admin('POST', '/apis/authentication.k8s.io/v1beta1/selfsubjectreviews', {
          apiVersion: 'authentication.k8s.io/v1beta1',
          kind: 'SelfSubjectReview',
        });
        assert.equal(ssr.status, 201, ssr.body);
        assert.match(ssr.body, /"username":"skewless-sim-admin"/);
        return await cmds.during('cp-1', () => acts.readinessReport({ cluster: 'legacy', from: '1.32.13', hops: ['1.33.13'] }));
      } finally {
        cp.balancer.setBackends(ports);
      }
    };
    const ran = await onCp1();
    const report = ran.result;
    assert.deepEqual(report.problems, []);
    assert.deepEqual(
      report.findings.map((f) => `${f.check} ${f.severity} ${f.hop} ${f.ack}`),
      [`removed-api hold 1.33 ${SSR}`],
    );
    const what = report.findings[0]?.what ?? '';
    assert.match(
      what,
      /^authentication\.k8s\.io\/v1beta1\/selfsubjectreviews requested 1 time since the apiservers started, removed in 1\.33; /,
    );
    assert.match(what, /by skewless-sim-admin \(legacy-operator\/0\.9, 1 time in the audit log read\)/, what);
    assert.equal(report.looked.removedApis.metricsScrapes, 1, 'the one apiserver reached, counted once');
    assert.match(report.findings[0]?.source ?? '', /authentication\/v1beta1\/zz_generated\.prerelease-lifecycle\.go$/);
    // The audit log is read as root (the apiserver writes it 0600), with a fixed-string grep.
    assert.deepEqual(
      ran.ran.filter((c) => c.startsWith('sudo -n grep')),
      ['sudo -n grep -F -m 20000 \'"k8s.io/deprecated":"true"\' /var/log/kubernetes/audit/audit.log'],
    );
    // The report's other checks (hop prerequisites) run on the same node: every command only reads.
    assert.deepEqual(
      ran.ran.filter((c) => !isReadOnlyHostCommand(c)),
      [],
      ran.ran.join('\n'),
    );

    const later = await acts.readinessReport({ cluster: 'legacy', from: '1.33.13', hops: ['1.34.4'] });
    // (The hop to 1.34 is held for another reason, the real kubeadm 1.32's etcd 3.5.24: hop-prerequisites' business.)
    assert.deepEqual(
      later.findings.filter((f) => f.check === 'removed-api'),
      [],
      'removed in 1.33: not the business of a hop from 1.33',
    );
  });

  it('holds the first hop on a CRD version still in status.storedVersions but no longer served', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          { name: 'v1alpha1', served: false, storage: false, schema: { openAPIV3Schema: { type: 'object' } } },
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    };
    const created = await admin('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    assert.equal(created.status, 201, created.body);
    const status = await admin('PATCH', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com/status', {
      status: { storedVersions: ['v1alpha1', 'v1'] },
    });
    assert.equal(status.status, 200, status.body);

    const report = await acts.readinessReport({ cluster: 'legacy', from: '1.32.13', hops: ['1.33.13'] });
    const stored = report.findings.filter((f) => f.ack === 'removed-api:example.com/v1alpha1/widgets');
    assert.equal(stored.length, 1, JSON.stringify(report.findings));
    assert.match(stored[0]?.what ?? '', /CRD widgets\.example\.com still lists v1alpha1 in status\.storedVersions/);
    assert.equal(report.looked.removedApis.crdsStoredNotServed, 1);
  });

  it('a worker without the /metrics grant still reports: what it could not read, and why', async () => {
    const role = await tc.kube.rbac.readClusterRole({ name: 'skewless-worker' });
    const without = (role.rules ?? []).filter((r) => !r.nonResourceURLs?.includes('/metrics'));
    assert.equal(without.length, (role.rules ?? []).length - 1, 'deploy/rbac.yaml grants /metrics in a rule of its own');
    await tc.kube.rbac.replaceClusterRole({ name: 'skewless-worker', body: { ...role, rules: without } });
    try {
      let report = await acts.readinessReport({ cluster: 'legacy', from: '1.32.13', hops: ['1.33.13'] });
      for (let i = 0; i < 50 && report.problems.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 200)); // RBAC's informer sees the change within moments
        report = await acts.readinessReport({ cluster: 'legacy', from: '1.32.13', hops: ['1.33.13'] });
      }
      assert.equal(report.looked.removedApis.metricsScrapes, 0);
      assert.match(
        report.problems[0] ?? '',
        /^apiserver \/metrics: GET \/metrics: HTTP 403: .*\(apply deploy\/rbac\.yaml: the worker needs this grant\)$/,
      );
      // The audit log still names the client: the finding stands, without a count.
      assert.deepEqual(
        report.findings.map((f) => f.ack),
        [SSR, 'removed-api:example.com/v1alpha1/widgets'],
      );
    } finally {
      const now = await tc.kube.rbac.readClusterRole({ name: 'skewless-worker' });
      await tc.kube.rbac.replaceClusterRole({ name: 'skewless-worker', body: { ...now, rules: role.rules ?? [] } });
    }
  });
});
