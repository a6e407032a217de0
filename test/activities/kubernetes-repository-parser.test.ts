import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { maskUrlCredentials, nextMinor, parseAptKubernetesList, sedMinorExpression, withMinor } from '../../activities/parsers/kubernetes-repository.js';

const GUIDE = 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.32/deb/ /';

describe('kubernetes.list as kubernetes.io writes it (parser)', () => {
  it('recognises the install guide\'s line, comments around it, and a proxy of pkgs.k8s.io under another name', () => {
    assert.deepEqual(parseAptKubernetesList(`${GUIDE}\n`), { layout: 'per-minor', minor: '1.32', line: GUIDE });
    assert.deepEqual(parseAptKubernetesList(`# added by ansible\n\n${GUIDE}   # pinned\n`), { layout: 'per-minor', minor: '1.32', line: GUIDE });
    const proxy = 'deb [signed-by=/k.gpg arch=amd64] https://artifacts.example.com/pkgs-k8s/core:/stable:/v1.31/deb/ /';
    assert.deepEqual(parseAptKubernetesList(proxy), { layout: 'per-minor', minor: '1.31', line: proxy });
    assert.equal(parseAptKubernetesList('deb https://pkgs.k8s.io/core:/stable:/v1.33/deb/ /').layout, 'per-minor', 'without options');
  });

  it('says why anything else is not the guide\'s layout', () => {
    const why = (text: string) => {
      const parsed = parseAptKubernetesList(text);
      assert.equal(parsed.layout, 'unrecognised', text);
      return parsed.layout === 'unrecognised' ? parsed.why : '';
    };
    assert.match(why(''), /has 0 source line/);
    assert.match(why(`${GUIDE}\n${GUIDE.replace('v1.32', 'v1.33')}\n`), /has 2 source line/);
    assert.match(why('deb [signed-by=/k.gpg] https://apt.kubernetes.io/ kubernetes-xenial main'), /names no core:\/stable:\/v1\.XX\/deb\/ repository/);
    assert.match(why('deb [signed-by=/k.gpg] https://pkgs.k8s.io/core:/stable:/v1.32/rpm/ /'), /names no core:\/stable:\/v1\.XX\/deb\//);
    assert.match(why('deb [signed-by=/k.gpg] https://mirror.example/core:/stable:/v1.32/deb/ stable main'), /not the flat suite/);
    assert.match(why('deb-src https://pkgs.k8s.io/core:/stable:/v1.32/deb/ /'), /exactly one deb line/);
    assert.match(why('Types: deb\nURIs: https://pkgs.k8s.io/core:/stable:/v1.32/deb/\nSuites: /\n'), /has 3 source line/, 'a deb822 .sources body');
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

  it('masks credentials in a URL: history must not keep a mirror\'s password', () => {
    assert.equal(maskUrlCredentials('deb https://ops:s3cret@mirror.example/core:/stable:/v1.32/deb/ /'), 'deb https://***@mirror.example/core:/stable:/v1.32/deb/ /');
    const parsed = parseAptKubernetesList('deb [signed-by=/k.gpg] https://ops:s3cret@pkgs.k8s.io/core:/stable:/v1.32/deb/ /');
    assert.equal(parsed.layout === 'per-minor' && parsed.line, 'deb [signed-by=/k.gpg] https://***@pkgs.k8s.io/core:/stable:/v1.32/deb/ /');
    const odd = parseAptKubernetesList('deb https://ops:s3cret@mirror.example/debian stable main');
    assert.doesNotMatch(JSON.stringify(odd), /s3cret/);
  });
});
