import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AddressInfo } from 'node:net';

/**
 * An npm registry on loopback made of the repository's package-lock.json: each package's document
 * lists exactly the versions the lockfile holds, and each tarball comes out of this machine's npm
 * cache by its integrity (where `npm ci` put it). `npm install -g ./skewless-X.tgz --registry URL`
 * then installs the very dependency tree the tests ran on, with no network: the packaged install test
 * needs no registry, and a tarball the cache lacks is a 404 that names the package.
 */
export interface LockfileRegistry {
  url: string;
  stop(): Promise<void>;
}

interface LockEntry {
  name?: string;
  version?: string;
  integrity?: string;
  link?: boolean;
  [field: string]: unknown;
}

/** Fields of a lock entry that npm reads from a version's manifest to resolve and place it. */
const MANIFEST_FIELDS = [
  'dependencies',
  'optionalDependencies',
  'peerDependencies',
  'peerDependenciesMeta',
  'bin',
  'os',
  'cpu',
  'libc',
  'engines',
  'hasInstallScript',
  'deprecated',
];

/** npm's own cacache, the module that reads its cache (npm ships it; Node ships npm). */
interface Cacache {
  get: {
    hasContent(cache: string, integrity: string): Promise<unknown>;
    stream: { byDigest(cache: string, integrity: string): NodeJS.ReadableStream };
  };
}
function npmCacache(): Cacache {
  const npmDir = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm');
  return createRequire(join(npmDir, 'package.json'))('cacache');
}

export async function startLockfileRegistry(lockfilePath: string, npmCacheDir: string): Promise<LockfileRegistry> {
  const lock = JSON.parse(readFileSync(lockfilePath, 'utf8')) as { packages: Record<string, LockEntry> };
  const documents = new Map<string, { name: string; versions: Record<string, Record<string, unknown>> }>();
  const tarballs = new Map<string, string>(); // URL path → integrity
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || entry.link || !entry.version || !entry.integrity) continue;
    const name = entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const tarballPath = `/-/${tarballs.size}.tgz`;
    tarballs.set(tarballPath, entry.integrity);
    const manifest: Record<string, unknown> = { name, version: entry.version };
    for (const field of MANIFEST_FIELDS) if (entry[field] !== undefined) manifest[field] = entry[field];
    manifest.dist = { tarball: new URL(tarballPath.slice(1), url).href, integrity: entry.integrity };
    const doc = documents.get(name) ?? { name, versions: {} };
    doc.versions[entry.version] = manifest;
    documents.set(name, doc);
  }

  const cacache = npmCacache();
  const contentDir = join(npmCacheDir, '_cacache');
  server.on('request', (req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0] as string);
    const integrity = tarballs.get(path);
    if (integrity) {
      void cacache.get.hasContent(contentDir, integrity).then((has) => {
        if (!has) return void res.writeHead(404).end(`not in the npm cache: ${integrity}`);
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        cacache.get.stream.byDigest(contentDir, integrity).pipe(res);
      });
      return;
    }
    const doc = documents.get(path.slice(1));
    if (!doc) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not in the lockfile"}');
    const newest = Object.keys(doc.versions).at(-1) as string;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...doc, 'dist-tags': { latest: newest } }));
  });
  // closeAllConnections: npm keeps its sockets alive, and close() alone waits for them.
  return { url, stop: () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())) };
}
