import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The folders this test file's process made, removed when it exits. */
const made = new Set<string>();

function removeAll(): void {
  for (const dir of made) removeTempDir(dir);
}

/**
 * A fresh folder `skewless-<name>-XXXXXX` in the system's temporary folder, removed when the test
 * file's process exits, however its tests ended (a failed assertion, a hook that threw): no test
 * leaves a folder behind. Every test and helper makes its temporary folders here.
 */
export function tempDir(name: string): string {
  if (made.size === 0) process.once('exit', removeAll);
  const dir = mkdtempSync(join(tmpdir(), `skewless-${name}-`));
  made.add(dir);
  return dir;
}

/** Removes a folder of tempDir's now (a test that reuses the name, or frees the space early). */
export function removeTempDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // deliberate: a process of the test world may still be writing into it as this process exits
  }
  made.delete(dir);
}
