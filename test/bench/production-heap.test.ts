import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { productionNodeOptions } from '../../bench/production-heap.js';
import { tempDir } from '../helpers/temp-dir.js';

describe("the bench's worker heap is the production image's", () => {
  const dir = tempDir('heap');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const dockerfile = (text: string) => {
    const path = join(dir, `Dockerfile-${Math.random().toString(36).slice(2)}`);
    writeFileSync(path, text);
    return path;
  };

  it("reads the Dockerfile's ENV NODE_OPTIONS, quoted or not; none set is empty", () => {
    assert.equal(productionNodeOptions(dockerfile('FROM x\nENV NODE_OPTIONS="--max-old-space-size=300"\n')), '--max-old-space-size=300');
    assert.equal(productionNodeOptions(dockerfile('FROM x\nENV NODE_OPTIONS=--max-old-space-size=200\n')), '--max-old-space-size=200');
    assert.equal(productionNodeOptions(dockerfile('FROM x\nENV NODE_ENV=production\n')), '');
  });
});
