import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acknowledgementNameProblem, gateFindings } from '../../rules/readiness/finding.js';
import { otherSourceFindings, type OtherSourceFailure } from '../../rules/readiness/other-sources.js';

describe("readiness: a node's other package sources that fail to refresh", () => {
  const cases: { name: string; failure: OtherSourceFailure; what: RegExp; todo: RegExp; ack: string }[] = [
    {
      name: 'apt, a distribution with its file',
      failure: {
        node: 'worker-1',
        file: '/etc/apt/sources.list.d/docker.list',
        url: 'https://download.docker.com/linux/debian',
        suite: 'bookworm',
        status: '404',
      },
      what: /^\/etc\/apt\/sources\.list\.d\/docker\.list \(https:\/\/download\.docker\.com\/linux\/debian bookworm\) fails to refresh \(404\); /,
      todo: /^fix or remove \/etc\/apt\/sources\.list\.d\/docker\.list on worker-1: .*apt-get update/,
      ack: 'other-source:worker-1:/etc/apt/sources.list.d/docker.list',
    },
    {
      name: 'dnf, by repository id',
      failure: {
        node: 'w-2',
        file: '/etc/yum.repos.d/docker-ce.repo',
        url: 'https://download.docker.com/linux/rhel/9/',
        repo: 'docker-ce-stable',
      },
      what: /^\/etc\/yum\.repos\.d\/docker-ce\.repo \(repository 'docker-ce-stable' https:\/\/download\.docker\.com\/linux\/rhel\/9\/\) fails to refresh; /,
      todo: /the node's own dnf/,
      ack: 'other-source:w-2:/etc/yum.repos.d/docker-ce.repo',
    },
    {
      name: 'no file names the URL: the URL is the subject',
      failure: { node: 'cp-1', url: 'http://mirror.example.invalid/debian', suite: 'bookworm' },
      what: /^a source file \(http:\/\/mirror\.example\.invalid\/debian bookworm\) fails to refresh; /,
      todo: /^fix or remove a source file on cp-1/,
      ack: 'other-source:cp-1:http://mirror.example.invalid/debian',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const [f, ...more] = otherSourceFindings('1.33', [c.failure]);
      assert.deepEqual(more, []);
      assert.equal(f?.check, 'other-source');
      assert.equal(f?.severity, 'warn');
      assert.equal(f?.hop, '1.33');
      assert.equal(f?.node, c.failure.node);
      assert.match(f?.what ?? '', c.what);
      assert.match(f?.todo ?? '', c.todo);
      assert.equal(f?.ack, c.ack);
      assert.equal(acknowledgementNameProblem(c.ack), undefined, 'a well-formed name');
    });
  }

  it('warns, never holds', () => {
    const findings = otherSourceFindings(
      '1.33',
      cases.map((c) => c.failure),
    );
    const gate = gateFindings(findings, []);
    assert.deepEqual([gate.held.length, gate.warnings.length], [0, 3]);
  });
});
