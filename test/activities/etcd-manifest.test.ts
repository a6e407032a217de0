import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseEtcdManifest } from '../../activities/parsers/etcd-manifest.js';
import { etcdManifest } from '../../sim/hosts/host-seed.js';

/** kubeadm 1.33's etcd.yaml as `kubeadm join --control-plane` writes it on a second member (volumes name-first, quoted). */
const JOINED = `apiVersion: v1
kind: Pod
metadata:
  labels:
    component: etcd
    tier: control-plane
  name: etcd
  namespace: kube-system
spec:
  containers:
  - command:
    - etcd
    - --advertise-client-urls=https://10.1.2.12:2379
    - --data-dir=/var/lib/etcd
    - --initial-advertise-peer-urls=https://10.1.2.12:2380
    - --initial-cluster=cp-a=https://10.1.2.11:2380,cp-b=https://10.1.2.12:2380
    - --initial-cluster-state=existing
    - "--name=cp-b"
    image: registry.k8s.io/etcd:3.5.21-0
    volumeMounts:
    - mountPath: /data/etcd
      name: etcd-data
  volumes:
  - name: etcd-certs
    hostPath:
      path: /etc/kubernetes/pki/etcd
      type: DirectoryOrCreate
  - name: etcd-data
    hostPath:
      path: /data/etcd
      type: DirectoryOrCreate
`;

describe("parseEtcdManifest: a member's restore parameters from kubeadm's etcd.yaml", () => {
  it("reads name, peer URL and the etcd-data hostPath of the simulation's seeded manifest", () => {
    assert.deepEqual(parseEtcdManifest(etcdManifest('cp-1', '10.0.0.11')), {
      name: 'cp-1',
      peerUrl: 'https://10.0.0.11:2380',
      dataDir: '/var/lib/etcd',
    });
  });

  it('prefers the hostPath the kubelet mounts over --data-dir, whatever the order of name and hostPath; quoted flags', () => {
    assert.deepEqual(parseEtcdManifest(JOINED), { name: 'cp-b', peerUrl: 'https://10.1.2.12:2380', dataDir: '/data/etcd' });
  });

  it('takes --data-dir when there is no etcd-data volume, and the first of several peer URLs', () => {
    const text = JOINED.replace(/ {2}volumes:[\s\S]*$/, '').replace(
      '--initial-advertise-peer-urls=https://10.1.2.12:2380',
      '--initial-advertise-peer-urls=https://10.1.2.12:2380,https://cp-b.example:2380',
    );
    assert.deepEqual(parseEtcdManifest(text), { name: 'cp-b', peerUrl: 'https://10.1.2.12:2380', dataDir: '/var/lib/etcd' });
  });

  const broken: [string, string][] = [
    ['not a manifest', 'hello\n'],
    ['no name', JOINED.replace('    - "--name=cp-b"\n', '')],
    ['a name with shell syntax', JOINED.replace('--name=cp-b', '--name=cp-b;id')],
    [
      'a peer URL with a path',
      JOINED.replace('--initial-advertise-peer-urls=https://10.1.2.12:2380', '--initial-advertise-peer-urls=https://10.1.2.12:2380/x'),
    ],
    ['a relative data dir', JOINED.replace('path: /data/etcd', 'path: data/etcd')],
    ['a data dir going up', JOINED.replace('path: /data/etcd', 'path: /data/../etc')],
  ];
  for (const [what, text] of broken) {
    it(`refuses ${what}`, () => assert.equal(parseEtcdManifest(text), undefined));
  }
});
