import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { createClusterResolver } from '../../activities/host-address.js';
import { createHopPrerequisiteActivities, parseCertificateExpiration } from '../../activities/readiness/hop-prerequisites.js';
import { hostCommands } from '../helpers/sim-cluster.js';
import { clusterWorld } from '../helpers/sim-world.js';

// A per-node control plane at 1.32.13: the real kubeadm init made the PKI and the etcd manifest, and
// `kubeadm certs check-expiration` on the host is the real binary. Nothing about etcd or the
// certificates is set by the description here: what is found is what kubeadm 1.32 made.
const DESCRIPTION = `
name: realprereq
version: 1.32.13
repository: [1.32.13, 1.33.13]
controlPlane: per-node
nodes:
  - {name: cp, role: control-plane, count: 1}
  - {name: worker, role: worker, count: 1}
`;
const cluster = 'realprereq';
const YEAR = 365 * 24 * 3600;

describe('hop prerequisites against the real kubeadm (per-node control plane)', () => {
  const tc = clusterWorld(DESCRIPTION);
  let acts: ReturnType<typeof createHopPrerequisiteActivities>;
  before(async () => {
    acts = createHopPrerequisiteActivities({ clusters: createClusterResolver(tc.clustersDir) });
  });
  const { during } = hostCommands(() => tc);

  it('kubeadm 1.32 pins etcd 3.5.24: held before the 1.34 hop; its certificates outlive an hour’s run', async () => {
    const { result, ran } = await during('cp-1', () => acts.probeHopPrerequisites({ cluster, hops: ['1.33', '1.34'], runSeconds: 3600 }));
    const lines = result.findings.map((f) => `${f.check} ${f.severity} ${f.hop} ${f.ack}`).sort();
    assert.deepEqual(lines, [
      'etcd-version hold 1.34 etcd-version:cp-1',
      'repository hold 1.34 repository:cp-1/1.34',
      'repository hold 1.34 repository:worker-1/1.34',
    ]);
    assert.ok(ran.includes('sudo -n kubeadm certs check-expiration -o json'), ran.join('\n'));
  });

  it('the real certs check-expiration -o json parses: a two-year run outlives every leaf (a year), not the CAs (ten)', async () => {
    const { findings } = await acts.probeHopPrerequisites({ cluster, hops: ['1.33'], runSeconds: 2 * YEAR });
    const certs = findings.filter((f) => f.check === 'cert-expiry').map((f) => f.ack.replace('cert-expiry:cp-1/', ''));
    for (const leaf of ['admin.conf', 'apiserver', 'apiserver-kubelet-client', 'etcd-server', 'front-proxy-client', 'super-admin.conf']) {
      assert.ok(certs.includes(leaf), `${leaf} in ${certs.join(', ')}`);
    }
    for (const ca of ['ca', 'etcd-ca', 'front-proxy-ca']) assert.ok(!certs.includes(ca), `${ca} is valid ten years`);
    assert.ok(
      findings.every((f) => f.check !== 'cert-expiry' || f.severity === 'hold'),
      'read, not a warning that it could not be',
    );
  });

  it('parseCertificateExpiration reads what the real binary prints', async () => {
    const { shell } = createClusterResolver(tc.clustersDir)(cluster);
    const r = await shell.exec('cp-1', ['kubeadm', 'certs', 'check-expiration', '-o', 'json'], { timeoutMs: 30_000, sudo: true });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.match(r.stdout, /"apiVersion": "output\.kubeadm\.k8s\.io\/v1alpha3"/);
    const certs = parseCertificateExpiration(r.stdout);
    assert.ok(certs.length >= 10, r.stdout);
    for (const c of certs) assert.ok(Number.isFinite(Date.parse(c.expirationDate)), `${c.name}: ${c.expirationDate}`);
  });
});
