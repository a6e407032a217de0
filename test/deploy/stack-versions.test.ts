// The versions docker-compose.yml names are the ones the stack without Docker runs (stack/,
// `npm run stack`): both read tooling/versions.json's side of it, so a bump of one without the other
// fails here. The compose file is parsed, not run (no Docker engine on these machines).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stackVersions } from '../../stack/stack-tools.js';
import { loadCompose, readRepoFile } from './compose-file.js';

const compose = loadCompose();
const versions = stackVersions();
const imageOf = (service: string): string => {
  const image = compose.services[service]?.image;
  assert.ok(image, `docker-compose.yml has no image for ${service}`);
  return image;
};
/** `repo:tag` → [repo, tag]. */
const split = (image: string): [string, string] => {
  const at = image.lastIndexOf(':');
  return [image.slice(0, at), image.slice(at + 1)];
};

describe('docker-compose.yml runs what the stack without Docker runs (tooling/versions.json)', () => {
  it('the Temporal server and both admin-tools jobs at the server version the stack builds', () => {
    assert.deepEqual(split(imageOf('temporal')), ['temporalio/server', versions.temporalServer.replace(/^v/, '')]);
    for (const job of ['temporal-schema', 'temporal-setup']) {
      const [repo, tag] = split(imageOf(job));
      assert.equal(repo, 'temporalio/admin-tools');
      assert.equal(tag.split('-')[0], versions.temporalServer.replace(/^v/, ''), `${job}: admin-tools ${tag} is not the server's version`);
    }
  });

  it('the UI at the version the stack builds', () => {
    assert.deepEqual(split(imageOf('temporal-ui')), ['temporalio/ui', versions.temporalUi.replace(/^v/, '')]);
  });

  it("PostgreSQL of the major Debian's package gives the stack (patch releases follow each side's security updates)", () => {
    const [repo, tag] = split(imageOf('postgresql'));
    assert.equal(repo, 'postgres');
    assert.match(tag, /^\d+\.\d+-bookworm$/, 'a pinned minor on Debian bookworm, as the stack host');
    assert.equal(tag.split('.')[0], versions.postgresMajor);
  });

  it('the versions scripts build and install are the same file the stack reads', () => {
    for (const [script, key] of [
      ['scripts/ensure-temporal-server.sh', 'temporalServer'],
      ['scripts/ensure-temporal-ui.sh', 'temporalUi'],
      ['scripts/ensure-postgres.sh', 'postgresMajor'],
    ]) {
      assert.match(readRepoFile(script!), new RegExp(`tooling/versions\\.json'\\)\\.${key}\\b`), `${script} reads ${key}`);
    }
  });

  it('the deployment guide names the images compose runs', () => {
    const guide = readRepoFile('docs/deployment.md');
    for (const service of ['postgresql', 'temporal-schema', 'temporal', 'temporal-setup', 'temporal-ui'])
      assert.ok(guide.includes(`\`${imageOf(service)}\``), `docs/deployment.md does not name ${imageOf(service)}`);
  });
});
