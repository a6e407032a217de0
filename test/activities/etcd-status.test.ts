import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { etcdImageOf } from '../../activities/etcd-patch.js';
import { parseEndpointStatus, parseMemberList } from '../../activities/parsers/etcd-status.js';

// The shapes etcdctl 3.5/3.6 print with -w json (ids are uint64, past JSON's exact integers).
const MEMBERS = `{"header":{"cluster_id":14841639068965178418,"member_id":10276657743932975437,"raft_term":2},"members":[{"ID":10276657743932975437,"name":"cp-1","peerURLs":["https://10.0.0.11:2380"],"clientURLs":["https://10.0.0.11:2379"]},{"ID":10276657743932975438,"name":"cp-2","peerURLs":["https://10.0.0.12:2380"],"clientURLs":["https://10.0.0.12:2379"]}]}`;
const STATUS = `[{"Endpoint":"https://10.0.0.11:2379","Status":{"header":{"cluster_id":14841639068965178418,"member_id":10276657743932975437,"revision":9,"raft_term":2},"version":"3.5.24","dbSize":20480,"leader":10276657743932975437,"raftIndex":12,"raftTerm":2,"raftAppliedIndex":12,"dbSizeInUse":20480}},{"Endpoint":"https://10.0.0.12:2379","Status":{"header":{"member_id":10276657743932975438},"version":"3.5.36","leader":10276657743932975437,"errors":["memberID:1 alarm:NOSPACE "]}}]`;

describe('etcdctl -w json, read', () => {
  it('member list: ids kept exactly (two ids one apart stay apart)', () => {
    assert.deepEqual(parseMemberList(MEMBERS), [
      { id: '10276657743932975437', name: 'cp-1' },
      { id: '10276657743932975438', name: 'cp-2' },
    ]);
  });
  it('endpoint status --cluster: version, leader, errors; a failed endpoint from stderr', () => {
    const s = parseEndpointStatus(STATUS, 'Failed to get the status of endpoint https://10.0.0.13:2379 (context deadline exceeded)\n');
    assert.deepEqual(s, [
      { endpoint: 'https://10.0.0.11:2379', memberId: '10276657743932975437', version: '3.5.24', leader: '10276657743932975437' },
      {
        endpoint: 'https://10.0.0.12:2379',
        memberId: '10276657743932975438',
        version: '3.5.36',
        leader: '10276657743932975437',
        errors: ['memberID:1 alarm:NOSPACE '],
      },
      { endpoint: 'https://10.0.0.13:2379', errors: ['context deadline exceeded'] },
    ]);
  });
  it('not that output: undefined', () => {
    assert.equal(parseMemberList('Error: context deadline exceeded'), undefined);
    assert.equal(parseEndpointStatus('{"x":1}', ''), undefined);
  });
});

describe("the etcd image of kubeadm's manifest", () => {
  const manifest = (image: string) =>
    `spec:\n  containers:\n  - command:\n    - etcd\n    - --name=cp-1\n    image: ${image}\n    imagePullPolicy: IfNotPresent\n`;
  it('repository and tag', () =>
    assert.deepEqual(etcdImageOf(manifest('registry.k8s.io/etcd:3.5.24-0')), {
      line: 'image: registry.k8s.io/etcd:3.5.24-0',
      repository: 'registry.k8s.io/etcd',
      tag: '3.5.24-0',
    }));
  it('a mirror and a digest', () => {
    const digest = `@sha256:${'a'.repeat(64)}`;
    assert.deepEqual(etcdImageOf(manifest(`mirror.example.com:5000/k8s/etcd:3.5.24-0${digest}`)), {
      line: `image: mirror.example.com:5000/k8s/etcd:3.5.24-0${digest}`,
      repository: 'mirror.example.com:5000/k8s/etcd',
      tag: '3.5.24-0',
      digest,
    });
  });
  it('not an etcd image: undefined', () => assert.equal(etcdImageOf(manifest('registry.k8s.io/kube-apiserver:v1.32.13')), undefined));
});
