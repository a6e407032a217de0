import assert from 'node:assert/strict';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { describe, it } from 'node:test';
import { parseDnfList, parseRpmQuery } from '../../activities/parsers/dnf-list.js';
import {
  maskUrlCredentials,
  nextMinor,
  parseAptKubernetesList,
  parseDnfKubernetesRepo,
  sedMinorExpression,
  withMinor,
} from '../../activities/parsers/kubernetes-repository.js';
import { buildRunbook, planRollout } from '../../rules/index.js';

const GUIDE = 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.32/deb/ /';

describe('kubernetes.list as kubernetes.io writes it (parser)', () => {
  it("recognises the install guide's line, comments around it, and a proxy of pkgs.k8s.io under another name", () => {
    assert.deepEqual(parseAptKubernetesList(`${GUIDE}\n`), { layout: 'per-minor', minor: '1.32', line: GUIDE });
    assert.deepEqual(parseAptKubernetesList(`# added by ansible\n\n${GUIDE}   # pinned\n`), {
      layout: 'per-minor',
      minor: '1.32',
      line: GUIDE,
    });
    const proxy = 'deb [signed-by=/k.gpg arch=amd64] https://artifacts.example.com/pkgs-k8s/core:/stable:/v1.31/deb/ /';
    assert.deepEqual(parseAptKubernetesList(proxy), { layout: 'per-minor', minor: '1.31', line: proxy });
    assert.equal(parseAptKubernetesList('deb https://pkgs.k8s.io/core:/stable:/v1.33/deb/ /').layout, 'per-minor', 'without options');
  });

  it("says why anything else is not the guide's layout", () => {
    const why = (text: string) => {
      const parsed = parseAptKubernetesList(text);
      assert.equal(parsed.layout, 'unrecognised', text);
      return parsed.layout === 'unrecognised' ? parsed.why : '';
    };
    assert.match(why(''), /has 0 source line/);
    assert.match(why(`${GUIDE}\n${GUIDE.replace('v1.32', 'v1.33')}\n`), /has 2 source line/);
    assert.match(
      why('deb [signed-by=/k.gpg] https://apt.kubernetes.io/ kubernetes-xenial main'),
      /names no core:\/stable:\/v1\.XX\/deb\/ repository/,
    );
    assert.match(why('deb [signed-by=/k.gpg] https://pkgs.k8s.io/core:/stable:/v1.32/rpm/ /'), /names no core:\/stable:\/v1\.XX\/deb\//);
    assert.match(why('deb [signed-by=/k.gpg] https://mirror.example/core:/stable:/v1.32/deb/ stable main'), /not the flat suite/);
    assert.match(why('deb-src https://pkgs.k8s.io/core:/stable:/v1.32/deb/ /'), /exactly one deb line/);
    assert.match(
      why('Types: deb\nURIs: https://pkgs.k8s.io/core:/stable:/v1.32/deb/\nSuites: /\n'),
      /has 3 source line/,
      'a deb822 .sources body',
    );
  });

  it('points the text at another minor, touching nothing else; the sed expression names the same change', () => {
    const text = `# keep\n${GUIDE}\n`;
    assert.equal(withMinor(text, '1.33'), `# keep\n${GUIDE.replace('v1.32', 'v1.33')}\n`);
    assert.equal(withMinor(withMinor(text, '1.33'), '1.32'), text, 'and back');
    assert.equal(sedMinorExpression('1.32', '1.33'), 's,/core:/stable:/v1.32/,/core:/stable:/v1.33/,g');
    assert.match(sedMinorExpression('1.32', '1.33'), /^[A-Za-z0-9._:=/+@,~-]+$/, 'one plain word: no shell or sed metacharacter');
    assert.equal(nextMinor('1.32'), '1.33');
    assert.equal(nextMinor('1.9'), '1.10');
  });

  it("masks credentials in a URL: history must not keep a mirror's password", () => {
    assert.equal(
      maskUrlCredentials('deb https://ops:s3cret@mirror.example/core:/stable:/v1.32/deb/ /'),
      'deb https://***@mirror.example/core:/stable:/v1.32/deb/ /',
    );
    const parsed = parseAptKubernetesList('deb [signed-by=/k.gpg] https://ops:s3cret@pkgs.k8s.io/core:/stable:/v1.32/deb/ /');
    assert.equal(parsed.layout === 'per-minor' && parsed.line, 'deb [signed-by=/k.gpg] https://***@pkgs.k8s.io/core:/stable:/v1.32/deb/ /');
    const odd = parseAptKubernetesList('deb https://ops:s3cret@mirror.example/debian stable main');
    assert.doesNotMatch(JSON.stringify(odd), /s3cret/);
  });
});

const GUIDE_REPO = (minor: string) =>
  [
    '[kubernetes]',
    'name=Kubernetes',
    `baseurl=https://pkgs.k8s.io/core:/stable:/v${minor}/rpm/`,
    'enabled=1',
    'gpgcheck=1',
    `gpgkey=https://pkgs.k8s.io/core:/stable:/v${minor}/rpm/repodata/repomd.xml.key`,
    'exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni',
    '',
  ].join('\n');

describe('kubernetes.repo as kubernetes.io writes it, and what dnf and rpm print (parsers)', () => {
  it("recognises the guide's section and its minor; withMinor moves baseurl and gpgkey together", () => {
    assert.deepEqual(parseDnfKubernetesRepo(GUIDE_REPO('1.32')), {
      layout: 'per-minor',
      minor: '1.32',
      line: 'baseurl=https://pkgs.k8s.io/core:/stable:/v1.32/rpm/',
    });
    assert.equal(withMinor(GUIDE_REPO('1.32'), '1.33'), GUIDE_REPO('1.33'));
    const withKeyElsewhere = GUIDE_REPO('1.32').replace(/^gpgkey=.*$/m, 'gpgkey=https://keys.example.com/kubernetes.asc');
    assert.equal(parseDnfKubernetesRepo(withKeyElsewhere).layout, 'per-minor', "a site's own key URL names no minor");
  });

  it("says why anything else is not the guide's layout", () => {
    const why = (text: string) => {
      const p = parseDnfKubernetesRepo(text);
      return p.layout === 'unrecognised' ? p.why : 'recognised';
    };
    assert.match(why(`${GUIDE_REPO('1.32')}[extras]\nbaseurl=https://example.com/\n`), /section\(s\) \[kubernetes\] \[extras\]/);
    assert.match(why(GUIDE_REPO('1.32').replace('[kubernetes]', '[k8s]')), /the install guide's has exactly one, \[kubernetes\]/);
    assert.match(
      why(GUIDE_REPO('1.32').replace(/v1\.32\/rpm\/repodata/, 'v1.31/rpm/repodata')),
      /gpgkey does not follow the baseurl's minor/,
    );
    assert.match(
      why(GUIDE_REPO('1.32').replace(/^baseurl=.*$/m, 'baseurl=https://mirror.example.com/el9/kubernetes/')),
      /names no core:\/stable:\/v1\.XX\/rpm\/ repository/,
    );
    assert.match(why(`${GUIDE_REPO('1.32')}mirrorlist=https://mirrors.example.com/list\n`), /mirrorlist does not follow/);
    assert.match(why(GUIDE_REPO('1.32').replace(/^baseurl=.*$/m, '')), /exactly one baseurl/);
  });

  it("reads dnf list's Available section (wrapped rows too) and rpm -q's query format", () => {
    const listing = [
      'Installed Packages',
      'kubeadm.x86_64                1.32.4-150500.1.1                @kubernetes',
      'Available Packages',
      'kubeadm.x86_64                1.32.4-150500.1.1                kubernetes',
      'kubeadm.x86_64                1.33.7-150500.1.1                kubernetes',
      'kubernetes-cni.x86_64',
      '                              1.6.0-150500.1.1                 kubernetes',
      '',
    ].join('\n');
    assert.deepEqual(
      parseDnfList(listing).map((e) => `${e.package} ${e.packageVersion} ${e.version} ${e.source}`),
      [
        'kubeadm 1.33.7-150500.1.1 1.33.7 kubernetes',
        'kubeadm 1.32.4-150500.1.1 1.32.4 kubernetes',
        'kubernetes-cni 1.6.0-150500.1.1 1.6.0 kubernetes',
      ],
    );
    assert.deepEqual(parseDnfList('Installed Packages\nkubeadm.x86_64  1.32.4-150500.1.1  @kubernetes\n'), [], 'installed is not offered');
    assert.deepEqual(parseRpmQuery('kubeadm 1.33.7-150500.1.1\npackage kubectl is not installed\n'), { kubeadm: '1.33.7-150500.1.1' });
  });

  it("the runbook shows each manager's own commands, the refresh of the Kubernetes source alone as the hop runs it", () => {
    const rollout = planRollout([
      { name: 'cp-1', role: 'control-plane' },
      { name: 'w-1', role: 'worker' },
    ]);
    const commands = (manager: 'apt' | 'dnf') =>
      buildRunbook(['1.33.7'], rollout, manager)
        .filter((s) => s.node === 'w-1' && s.command)
        .map((s) => s.command);
    assert.deepEqual(commands('dnf'), [
      'point kubernetes.repo at v1.33 && dnf makecache --repo=kubernetes && dnf install --disableexcludes=kubernetes kubeadm-1.33.7-* && kubeadm upgrade node',
      'dnf install --disableexcludes=kubernetes kubelet-1.33.7-* kubectl-1.33.7-* && systemctl daemon-reload && systemctl restart kubelet',
    ]);
    assert.deepEqual(commands('apt'), [
      'point kubernetes.list at v1.33 && apt-get update -o Dir::Etc::SourceList=/etc/apt/sources.list.d/kubernetes.list -o Dir::Etc::SourceParts=- && apt-get install kubeadm=1.33.7-* && kubeadm upgrade node',
      'apt-get install kubelet=1.33.7-* kubectl=1.33.7-* && systemctl daemon-reload && systemctl restart kubelet',
    ]);
  });
});

describe('packageManager in the cluster configuration', () => {
  const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
  it('is apt by default, dnf when asked, and anything else is a one-line refusal', () => {
    assert.equal(parseClusterConfig(BASE, 'lab.yaml').packageManager, 'apt');
    assert.equal(parseClusterConfig(`${BASE}packageManager: dnf\n`, 'lab.yaml').packageManager, 'dnf');
    assert.throws(
      () => parseClusterConfig(`${BASE}packageManager: yum\n`, 'lab.yaml'),
      (err: Error & { type?: string }) => {
        assert.equal(err.type, 'ClusterConfigInvalid');
        assert.match(err.message, /^lab\.yaml: packageManager "yum" is not supported \(apt or dnf\)$/);
        return true;
      },
    );
  });
});
