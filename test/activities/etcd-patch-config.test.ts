import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseClusterConfig } from '../../activities/cluster-config.js';

const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
const parse = (extra: string) => parseClusterConfig(`${BASE}${extra}`, 'lab.yaml');

describe('cluster configuration: etcd.patchImageTag (the etcd patch step of --fix-prerequisites)', () => {
  it('absent: none (the newest known 3.5 image is the target); present: the tag', () => {
    assert.equal(parse('').etcd.patchImageTag, undefined);
    assert.equal(parse('etcd: {patchImageTag: 3.5.27-0}\n').etcd.patchImageTag, '3.5.27-0');
  });
  for (const bad of ['3.5.24-0', '3.6.5-0', 'latest', '42'])
    it(`refuses ${bad}: one line naming the key`, () =>
      assert.throws(
        () => parse(`etcd: {patchImageTag: "${bad}"}\n`),
        (err: Error & { type?: string }) => {
          assert.equal(err.type, 'ClusterConfigInvalid');
          assert.match(err.message, /^lab\.yaml: etcd\.patchImageTag /);
          assert.ok(!err.message.includes('\n'));
          return true;
        },
      ));
  it('refuses a number (YAML reads 3.5 as one)', () =>
    assert.throws(() => parse('etcd: {patchImageTag: 3.5}\n'), /etcd\.patchImageTag must be an image tag/));
});
