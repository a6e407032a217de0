import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  parseAptSourceFiles,
  parseAptUpdateFailures,
  parseDnfMetadataFailures,
  parseDnfRepoFiles,
  sourceOfFailure,
} from '../../activities/parsers/refresh-failures.js';

// apt 2.6 (Debian 12) and dnf 4 output, as the tools print a stale repository's 404.
const APT_UPDATE = `Hit:1 http://deb.debian.org/debian bookworm InRelease
Ign:2 https://download.docker.com/linux/debian bookworm InRelease
Err:3 https://download.docker.com/linux/debian bookworm Release
  404  Not Found [IP: 3.162.3.44 443]
Hit:4 https://pkgs.k8s.io/core:/stable:/v1.33/deb  InRelease
Ign:5 https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.30/deb  InRelease
Err:6 https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.30/deb  Release
  404  Not Found [IP: 34.107.204.206 443]
Reading package lists...
E: The repository 'https://download.docker.com/linux/debian bookworm Release' does not have a Release file.
N: Updating from such a repository can't be done securely, and is therefore disabled by default.
E: The repository 'https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.30/deb  Release' does not have a Release file.
`;

const SOURCES = {
  '/etc/apt/sources.list.d/docker.list':
    'deb [arch=amd64 signed-by=/etc/apt/keyrings/docker.asc] https://download.docker.com/linux/debian bookworm stable\n',
  '/etc/apt/sources.list.d/cri-o.list': '# CRI-O\ndeb [signed-by=/k.gpg] https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.30/deb/ /\n',
  '/etc/apt/sources.list.d/kubernetes.list': 'deb [signed-by=/k.gpg] https://pkgs.k8s.io/core:/stable:/v1.33/deb/ /\n',
  '/etc/apt/sources.list.d/company.list': 'deb http://user:secret@mirror.example.invalid/debian bookworm main\n',
};

describe("apt-get update's failures, each named by its source", () => {
  it('reads every failed source once, with its distribution (empty for a flat repository) and status', () => {
    assert.deepEqual(parseAptUpdateFailures(APT_UPDATE), [
      { url: 'https://download.docker.com/linux/debian', suite: 'bookworm', status: '404' },
      { url: 'https://pkgs.k8s.io/addons:/cri-o:/stable:/v1.30/deb', suite: '', status: '404' },
    ]);
  });

  it('reads "Failed to fetch" of an InRelease or an index, under dists/ or flat', () => {
    const out = [
      'E: Failed to fetch http://mirror.example.invalid/debian/dists/bookworm/main/binary-amd64/Packages  404  Not Found [IP: 10.0.0.9 80]',
      'W: Failed to fetch https://pkgs.k8s.io/core:/stable:/v1.36/deb/InRelease  404  Not Found',
      'E: Some index files failed to download. They have been ignored, or old ones used instead.',
    ].join('\n');
    assert.deepEqual(parseAptUpdateFailures(out), [
      { url: 'http://mirror.example.invalid/debian', suite: 'bookworm', status: '404' },
      { url: 'https://pkgs.k8s.io/core:/stable:/v1.36/deb', suite: '', status: '404' },
    ]);
  });

  it('finds nothing in a clean update', () => {
    assert.deepEqual(
      parseAptUpdateFailures('Hit:1 https://pkgs.k8s.io/core:/stable:/v1.33/deb  InRelease\nReading package lists...\n'),
      [],
    );
  });

  it('names the file of each failure by URL and distribution; credentials in a URL do not stop the match', () => {
    const sources = parseAptSourceFiles(SOURCES);
    assert.deepEqual(
      parseAptUpdateFailures(APT_UPDATE).map((f) => sourceOfFailure(f, sources)?.file),
      ['/etc/apt/sources.list.d/docker.list', '/etc/apt/sources.list.d/cri-o.list'],
    );
    assert.equal(
      sourceOfFailure({ url: 'http://mirror.example.invalid/debian', suite: 'bookworm' }, sources)?.file,
      '/etc/apt/sources.list.d/company.list',
    );
    assert.equal(sourceOfFailure({ url: 'https://elsewhere.invalid/x', suite: '' }, sources), undefined);
  });
});

describe("dnf's metadata failures, each named by its repository", () => {
  const DNF = `Errors during downloading metadata for repository 'docker-ce-stable':
  - Status code: 404 for https://download.docker.com/linux/rhel/9/x86_64/stable/repodata/repomd.xml (IP: 3.162.3.44)
Error: Failed to download metadata for repo 'docker-ce-stable': Cannot download repomd.xml: Cannot download repodata/repomd.xml: All mirrors were tried
Ignoring repositories: docker-ce-stable
Error: Failed to download metadata for repo 'company': Cannot download repomd.xml: Curl error (6): Couldn't resolve host name
`;
  it('reads the id, the URL and the status where dnf gives them', () => {
    assert.deepEqual(parseDnfMetadataFailures(DNF), [
      { url: 'https://download.docker.com/linux/rhel/9/x86_64/stable/', repo: 'docker-ce-stable', status: '404' },
      { url: '', repo: 'company' },
    ]);
  });

  it('names the .repo file of each by its section', () => {
    const sources = parseDnfRepoFiles({
      '/etc/yum.repos.d/docker-ce.repo':
        '[docker-ce-stable]\nname=Docker\nbaseurl=https://download.docker.com/linux/rhel/9/x86_64/stable\n[docker-ce-test]\nenabled=0\n',
      '/etc/yum.repos.d/company.repo': '[company]\nbaseurl=https://mirror.example.invalid/el9/\n',
    });
    assert.deepEqual(
      parseDnfMetadataFailures(DNF).map((f) => sourceOfFailure(f, sources)),
      [
        {
          file: '/etc/yum.repos.d/docker-ce.repo',
          repo: 'docker-ce-stable',
          url: 'https://download.docker.com/linux/rhel/9/x86_64/stable',
        },
        { file: '/etc/yum.repos.d/company.repo', repo: 'company', url: 'https://mirror.example.invalid/el9/' },
      ],
    );
  });
});
