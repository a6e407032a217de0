import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOST_TIMEOUT_LIMITS, parseClusterConfig } from '../../activities/cluster-config.js';

// The cluster configuration's sections are described by their keys (activities/cluster-config.ts's
// SECTIONS, shapes from rules/input-shapes.ts): what a minimal file gets, and how each refusal reads.
const MINIMAL = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
const refused = (yaml: string, message: RegExp) =>
  assert.throws(
    () => parseClusterConfig(yaml, 'lab.yaml'),
    (err: Error) => (assert.match(err.message, message), true),
  );

describe('the cluster configuration, described by its keys', () => {
  it('fills in every default of a minimal file', () => {
    const c = parseClusterConfig(MINIMAL, 'lab.yaml');
    assert.deepEqual(c.ssh, { user: 'u', port: 22, privateKeyPath: '/p', knownHostsPath: '/h', sudo: true, connectTimeoutSeconds: 10 });
    assert.deepEqual(c.etcd, {
      endpoint: 'https://127.0.0.1:2379',
      caCert: '/etc/kubernetes/pki/etcd/ca.crt',
      cert: '/etc/kubernetes/pki/etcd/server.crt',
      key: '/etc/kubernetes/pki/etcd/server.key',
      remoteDir: '/var/lib/skewless/snapshots',
    });
    assert.deepEqual(c.drain, { timeoutSeconds: 600, deleteEmptyDirData: false, ignoreDaemonSets: true });
    assert.deepEqual(c.timeouts, Object.fromEntries(Object.entries(HOST_TIMEOUT_LIMITS).map(([k, { default: d }]) => [k, d])));
    assert.deepEqual(c.nodes, {});
    assert.deepEqual(c.probes, []);
    assert.equal(c.packageManager, 'apt');
  });

  it("takes the operator's values, a node's override and a probe with its defaults", () => {
    const c = parseClusterConfig(
      `${MINIMAL}drain: {timeoutSeconds: 900, gracePeriodSeconds: 0}\nnodes: {w-1: {address: 10.0.0.9}}\nprobes: [{name: shop, url: 'http://x/'}]\n`,
      'lab.yaml',
    );
    assert.deepEqual(c.drain, { timeoutSeconds: 900, gracePeriodSeconds: 0, deleteEmptyDirData: false, ignoreDaemonSets: true });
    assert.deepEqual(c.nodes, { 'w-1': { address: '10.0.0.9' } });
    assert.deepEqual(c.probes, [{ name: 'shop', url: 'http://x/', expectStatus: 200, timeoutSeconds: 5 }]);
  });

  it('refuses in one line naming the key', () => {
    refused(MINIMAL.replace('user: u', 'user: u, port: 0'), /^lab\.yaml: ssh\.port must be an integer from 1 to 65535, got 0$/);
    refused(MINIMAL.replace('user: u', 'user: u, sudo: yes'), /^lab\.yaml: ssh\.sudo must be true or false, got "yes"$/);
    refused(MINIMAL.replace('user: u', 'user: u, prot: 22'), /^lab\.yaml: unknown key ssh\.prot \(known: user, port, /);
    refused(MINIMAL.replace('dir: /s', 'dir: s'), /^lab\.yaml: snapshots\.dir must be an absolute path, got "s"$/);
    refused(MINIMAL.replace('name: lab', 'name: Lab'), /^lab\.yaml: name must be a DNS label .*got "Lab"$/);
    refused(`${MINIMAL}nodes: {w-1: {adress: x}}\n`, /^lab\.yaml: unknown key nodes\.w-1\.adress \(known: address, port\)$/);
    refused(`${MINIMAL}nodes: {w-1: 7}\n`, /^lab\.yaml: nodes\.w-1 must be a mapping$/);
    refused(
      `${MINIMAL}probes: [{name: shop, url: 'http://x/', expectStatus: 99}]\n`,
      /^lab\.yaml: probes\[0\]\.expectStatus must be an integer from 100 to 599, got 99$/,
    );
    refused(`${MINIMAL}drain: {gracePeriodSeconds: -1}\n`, /^lab\.yaml: drain\.gracePeriodSeconds must be an integer ≥ 0, got -1$/);
  });
});
