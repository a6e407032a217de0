import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EtcdMembers, etcdMemberOf } from '../../sim/cluster/etcd-members.js';
import { ETCD_RELEASES, etcdVersionOfTag, kubeadmEtcdTag } from '../../sim/cluster/etcd-releases.js';
import { KUBE_RELEASES } from '../../sim/cluster/kube-releases.js';

describe("a per-node simulation's etcd releases and members (no process started)", () => {
  it("has a build of the etcd every simulated kubeadm writes, and of a 3.5 patch etcd's 3.6 guide accepts (3.5.26+)", () => {
    for (const k of KUBE_RELEASES) assert.ok(ETCD_RELEASES.includes(etcdVersionOfTag(kubeadmEtcdTag(k)) ?? ''), `kubeadm ${k}`);
    assert.equal(kubeadmEtcdTag('1.33.13'), '3.5.24-0');
    assert.equal(kubeadmEtcdTag('1.34.4'), '3.6.5-0');
    const patch35 = ETCD_RELEASES.filter((v) => v.startsWith('3.5.')).map((v) => Number(v.split('.')[2]));
    assert.ok(Math.max(...patch35) >= 26, `a 3.5 patch ≥ 26 among ${ETCD_RELEASES.join(', ')}`);
  });

  it("reads an image tag's version as kubeadm writes it, and nothing else", () => {
    assert.equal(etcdVersionOfTag('3.5.24-0'), '3.5.24');
    assert.equal(etcdVersionOfTag('v3.6.5'), '3.6.5');
    assert.equal(etcdVersionOfTag('latest'), undefined);
    assert.equal(etcdVersionOfTag(undefined), undefined);
  });

  it("sends an etcdctl on a host to its own member for 127.0.0.1, to another control plane's for that one's address", async () => {
    const members = await EtcdMembers.create({
      members: [
        { node: 'cp-1', dataDir: '/nonexistent/1', version: '3.5.24' },
        { node: 'cp-2', dataDir: '/nonexistent/2', version: '3.5.24' },
      ],
      logs: '/nonexistent',
      clusterToken: 't',
    });
    const memberOf = etcdMemberOf(members, ['cp-1', 'cp-2'], (i) => `10.0.0.${11 + i}`);
    assert.equal(memberOf('cp-2', 'https://127.0.0.1:2379'), members.clientUrl('cp-2'));
    assert.equal(memberOf('cp-1', 'localhost:2379'), members.clientUrl('cp-1'));
    assert.equal(memberOf('cp-1', 'https://10.0.0.12:2379'), members.clientUrl('cp-2'));
    assert.equal(
      memberOf('cp-1', 'https://127.0.0.1:2379,https://10.0.0.12:2379'),
      `${members.clientUrl('cp-1')},${members.clientUrl('cp-2')}`,
    );
    assert.equal(memberOf('cp-1', 'https://192.0.2.1:2379'), undefined, 'an address no member has');
    assert.equal(memberOf('worker-1', 'https://127.0.0.1:2379'), undefined, 'a host without a member');
    assert.notEqual(members.clientUrl('cp-1'), members.clientUrl('cp-2'));
    assert.equal(members.versionOf('cp-1'), undefined, 'nothing runs');
  });
});
