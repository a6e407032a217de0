import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KUBE_RELEASES } from '../../sim/cluster/kube-releases.js';
import { join } from 'node:path';
import { DescriptionError, parseDescription, readDescription } from '../../sim/description.js';
import { imageOfManifest, withImage } from '../../sim/hosts/static-pod-manifest.js';
import { repoRoot } from '../helpers/run-cli.js';

const cluster = (extra: string, version = '1.32.13', repository = '[1.32.13, 1.33.13]') => `
name: d
version: ${version}
repository: ${repository}
${extra}
nodes:
  - {name: cp, role: control-plane, count: 2}
  - {name: worker, role: worker}
`;

describe('the simulation description: how the control plane runs', () => {
  it('lists the releases built for real, one per minor', () => {
    assert.ok(KUBE_RELEASES.length >= 3, KUBE_RELEASES.join(', '));
    const minors = KUBE_RELEASES.map((v) => v.split('.').slice(0, 2).join('.'));
    assert.equal(new Set(minors).size, minors.length, 'one release per minor');
    for (const v of KUBE_RELEASES) assert.match(v, /^1\.\d+\.\d+$/);
  });

  it('defaults to one shared set of programs, and takes per-node', () => {
    assert.equal(parseDescription(cluster('')).controlPlane, 'shared');
    const d = parseDescription(cluster('controlPlane: per-node'));
    assert.equal(d.controlPlane, 'per-node');
    assert.deepEqual(
      d.nodes.filter((n) => n.components).map((n) => n.components?.apiserver),
      ['1.32.13', '1.32.13'],
    );
  });

  it('refuses a per-node control plane that names a version no release was built for, saying which', () => {
    assert.throws(
      () => parseDescription(cluster('controlPlane: per-node', '1.32.4', '[1.32.4]')),
      (err: Error) =>
        err instanceof DescriptionError && /per-node runs real releases only \(.*1\.32\.13.*\); version names 1\.32\.4/.test(err.message),
    );
    assert.throws(
      () => parseDescription(cluster('controlPlane: per-node', '1.32.13', '[1.32.13, 1.33.7]')),
      /cp-1's components or repository names 1\.33\.7/,
    );
    // The shared model runs any version (its one apiserver is 1.34 whatever the manifests say).
    assert.equal(parseDescription(cluster('', '1.32.4', '[1.32.4, 1.33.7]')).version, '1.32.4');
  });

  it('refuses an unknown layout', () => {
    assert.throws(() => parseDescription(cluster('controlPlane: real')), /controlPlane must be shared or per-node/);
  });
});

describe("a static-pod manifest's image", () => {
  const manifest =
    'apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - command:\n    - kube-apiserver\n    image: registry.k8s.io/kube-apiserver:v1.32.13\n    name: kube-apiserver\n';

  it('is read from the container, and rewritten in place leaving every other line alone', () => {
    assert.equal(imageOfManifest(manifest), 'registry.k8s.io/kube-apiserver:v1.32.13');
    const next = withImage(manifest, 'registry.k8s.io/kube-apiserver:v1.33.13');
    assert.equal(imageOfManifest(next), 'registry.k8s.io/kube-apiserver:v1.33.13');
    assert.equal(next.replace('v1.33.13', 'v1.32.13'), manifest);
  });

  it("is read when the image is the list item's first key, quoted, and absent when there is none", () => {
    assert.equal(imageOfManifest('spec:\n  containers:\n  - image: "registry.k8s.io/etcd:3.5.24-0"\n'), 'registry.k8s.io/etcd:3.5.24-0');
    assert.equal(imageOfManifest('spec:\n  containers: []\n'), undefined);
    assert.equal(withImage('spec: {}\n', 'x'), 'spec: {}\n');
  });
});

describe('examples/mid-hop.yaml: the per-node keys', () => {
  it("loads, and each node runs what its kubelet:, components: and repository: say, the cluster's values elsewhere", () => {
    const d = readDescription(join(repoRoot, 'examples', 'mid-hop.yaml'));
    const summary = d.nodes.map(
      (n) =>
        `${n.name} ${n.role} kubelet ${n.kubelet}${n.components ? ` components ${Object.values(n.components).join('/')}` : ''} repository ${n.repository.join(',')}`,
    );
    assert.deepEqual(summary, [
      'cp-1 control-plane kubelet 1.32.4 components 1.33.7/1.33.7/1.33.7 repository 1.32.4,1.33.7,1.34.2',
      'cp-2 control-plane kubelet 1.32.4 components 1.32.4/1.32.4/1.32.4 repository 1.32.4,1.33.7,1.34.2',
      'worker-1 worker kubelet 1.32.4 repository 1.32.4,1.33.7,1.34.2',
      'worker-2 worker kubelet 1.32.4 repository 1.32.4,1.33.7,1.34.2',
      'worker-3 worker kubelet 1.31.9 repository 1.31.9,1.32.4,1.33.7',
    ]);
    assert.equal(d.version, '1.33.7', "the cluster's version is only the default");
  });
});

describe('the simulation description: the readiness facts of a node (issue 21)', () => {
  const withNodes = (nodes: string) => `
name: r
version: 1.33.7
nodes:
${nodes}
`;
  it('takes a cgroup, a container runtime, an etcd image tag and the certificates’ days per node; absent, nothing is set', () => {
    const d = parseDescription(
      withNodes(`  - {name: cp, role: control-plane, etcdImageTag: 3.5.24-0, certificateDays: 2}
  - {name: old, role: worker, cgroup: v1, containerRuntime: 'containerd://1.7.24'}
  - {name: new, role: worker}`),
    );
    const [cp, old, fresh] = d.nodes;
    assert.deepEqual([cp?.etcdImageTag, cp?.certificateDays, cp?.cgroup], ['3.5.24-0', 2, undefined]);
    assert.deepEqual([old?.cgroup, old?.containerRuntime], ['v1', 'containerd://1.7.24']);
    assert.deepEqual([fresh?.cgroup, fresh?.containerRuntime, fresh?.etcdImageTag], [undefined, undefined, undefined]);
  });

  const refused: [string, RegExp][] = [
    ['  - {name: cp, role: control-plane, cgroup: v3}', /nodes\[0\]\.cgroup must be v1 or v2/],
    [
      '  - {name: cp, role: control-plane, containerRuntime: containerd}',
      /nodes\[0\]\.containerRuntime must look like containerd:\/\/2\.1\.4/,
    ],
    ['  - {name: cp, role: control-plane, etcdImageTag: "latest"}', /nodes\[0\]\.etcdImageTag must look like 3\.5\.24-0/],
    ['  - {name: cp, role: control-plane, certificateDays: -1}', /nodes\[0\]\.certificateDays must be an integer ≥ 0/],
    [
      '  - {name: cp, role: control-plane}\n  - {name: w, role: worker, etcdImageTag: 3.5.24-0}',
      /nodes\[1\]: etcdImageTag and certificateDays are for control planes/,
    ],
  ];
  for (const [nodes, message] of refused) {
    it(`refuses ${nodes.trim().split('\n').at(-1)} in one line`, () => {
      assert.throws(
        () => parseDescription(withNodes(nodes)),
        (err: Error) => err instanceof DescriptionError && message.test(err.message) && !err.message.includes('\n'),
      );
    });
  }
});

describe('the simulation description: the sources beside Kubernetes and the holds of a host', () => {
  it('examples/other-sources.yaml loads: the cluster-wide sources for each node unless it has its own; holds as given', () => {
    const d = readDescription(join(repoRoot, 'examples', 'other-sources.yaml'));
    const of = (name: string) => d.nodes.find((n) => n.name === name)!;
    assert.deepEqual(
      of('cp').sources.map((s) => [s.file, s.broken ?? false]),
      [
        ['docker.list', false],
        ['cri-o.list', false],
      ],
    );
    assert.deepEqual(
      of('worker-1').sources.map((s) => [s.file, s.broken ?? false]),
      [
        ['docker.list', true],
        ['company.list', false],
      ],
    );
    assert.match(of('worker-1').sources[0]!.text, /bookworm stable\n$/);
    assert.deepEqual(of('worker-2').holds, ['kubelet']);
    assert.equal(of('cp').holds, undefined, 'absent: the guide’s three');
  });

  const refusals: [string, string, RegExp][] = [
    [
      'apt',
      'sources: [{file: docker.repo, text: "deb https://x.invalid/ bookworm stable"}]',
      /^sources\[0\]: file must be a file name ending in \.list/,
    ],
    [
      'apt',
      'sources: [{file: kubernetes.list, text: "deb https://x.invalid/ /"}]',
      /kubernetes\.list is the Kubernetes source the simulation writes itself/,
    ],
    [
      'apt',
      'sources: [{file: d.list, text: "deb https://x.invalid/ bookworm"}]',
      /^sources\[0\]: E: Malformed entry 1 in list file \/etc\/apt\/sources\.list\.d\/d\.list \(absolute Suite Component\)$/,
    ],
    ['apt', 'sources: [{file: d.list, text: "deb https://x.invalid/ /", broken: yes}]', /broken must be true or false/],
    ['apt', 'sources: [{file: d.list, text: "deb https://x.invalid/ /", url: x}]', /sources\[0\]\.url is not a key of a source/],
    [
      'dnf',
      'packageManager: dnf\nsources: [{file: d.repo, text: "[d]\\nname=d\\n"}]',
      /text names no repository \(a section with baseurl=\)/,
    ],
    [
      'dnf',
      'packageManager: dnf\nsources: [{file: d.list, text: "deb https://x.invalid/ /"}]',
      /ending in \.repo \(dnf reads only those\)/,
    ],
  ];
  for (const [manager, extra, message] of refusals) {
    it(`refuses ${manager}'s ${extra.split('\n').at(-1)} in one line`, () => {
      assert.throws(
        () => parseDescription(cluster(extra)),
        (err: Error) => err instanceof DescriptionError && message.test(err.message) && !err.message.includes('\n'),
      );
    });
  }

  it('refuses holds that are not package names, and a dnf host holding some but not all', () => {
    const node = (holds: string, manager = '') =>
      `name: d\nversion: 1.32.13\n${manager}\nnodes:\n  - {name: cp, role: control-plane, holds: ${holds}}\n`;
    assert.throws(() => parseDescription(node('[containerd]')), /nodes\[0\]\.holds\[0\] must be one of kubeadm, kubelet, kubectl/);
    assert.throws(
      () => parseDescription(node('[kubelet]', 'packageManager: dnf')),
      /a dnf host holds all of kubeadm, kubelet, kubectl .* or none/,
    );
    assert.deepEqual(parseDescription(node('[]', 'packageManager: dnf')).nodes[0]!.holds, []);
  });

  it('refuses, in one line, a fault no command skewless sends can match; takes one it sends', () => {
    const node = (command: string) =>
      `name: d\nversion: 1.32.13\nnodes:\n  - {name: cp, role: control-plane, faults: [{kind: fail, command: ${command}}]}\n`;
    assert.throws(
      () => parseDescription(node('kubeadm version')),
      (err: Error) =>
        err instanceof DescriptionError &&
        err.message ===
          `nodes[0].faults[0]: sim: fault fail: command "kubeadm version" can never match: skewless sends no command that starts with 'kubeadm version' (rules/host-command-forms.ts lists what it sends)`,
    );
    assert.deepEqual(parseDescription(node('kubeadm upgrade node')).nodes[0]!.faults, [{ kind: 'fail', command: 'kubeadm upgrade node' }]);
  });
});
