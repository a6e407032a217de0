// docker-compose.yml, the Dockerfile and .dockerignore held to the code. No Docker engine runs here, so
// nothing is built or started: the files are parsed and every setting they use is checked against
// what the code reads, what the build produces and what the worker's loader accepts.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import ssh2 from 'ssh2';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { checkClustersDir } from '../../worker/run-worker.js';
import { connectionSettings, workerConfig } from '../../worker/config.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import {
  asText,
  copyParts,
  dependsOn,
  dockerIgnored,
  environmentOf,
  execForm,
  interpolate,
  loadCompose,
  MissingVariable,
  mountsOf,
  parseDockerfile,
  parseEnvFile,
  portsOf,
  readRepoFile,
  repoRoot,
  variablesOf,
  type ComposeFile,
} from './compose-file.js';
import { tempDir } from '../helpers/temp-dir.js';

const SERVICES = ['postgresql', 'temporal-schema', 'temporal', 'temporal-setup', 'temporal-ui', 'worker'];
/** Host port → service: what the stack publishes, all on the loopback interface. */
const PUBLISHED = { 7233: 'temporal', 8080: 'temporal-ui', 9464: 'worker' } as Record<number, string>;

const composeText = readRepoFile('docker-compose.yml');
const compose: ComposeFile = loadCompose(composeText);
const exampleEnv = parseEnvFile(readRepoFile('deploy/compose.env.example'));
const dockerfile = parseDockerfile(readRepoFile('Dockerfile'));
const dockerignore = readRepoFile('.dockerignore');
const service = (name: string) => {
  const s = compose.services[name];
  assert.ok(s, `service ${name} is missing`);
  return s;
};

/** The environment variable names the worker's code reads: quoted names and `env.NAME` in worker/*.ts. */
function envNamesReadByWorker(): Set<string> {
  const names = new Set<string>();
  const dir = join(repoRoot, 'worker');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const code = readFileSync(join(dir, file), 'utf8').replace(/^\s*(\/\/|\*|\/\*).*$/gm, ''); // comments out
    for (const m of code.matchAll(/['"]((?:TEMPORAL|SKEWLESS)_[A-Z0-9_]+)['"]/g)) names.add(m[1]!);
    for (const m of code.matchAll(/\benv\.((?:TEMPORAL|SKEWLESS)_[A-Z0-9_]+)/g)) names.add(m[1]!);
  }
  return names;
}

/** The image reference with ARG defaults substituted. */
const resolveArgs = (text: string): string =>
  text.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, n: string) => {
    const v = dockerfile.args[n];
    assert.ok(v !== undefined && v !== '', `Dockerfile ARG ${n} has no default`);
    return v;
  });

/** name:tag pinned: a tag that is a version (a digit in it), never `latest`, never absent. */
function assertPinned(image: string, where: string): void {
  const m = /^(?:[a-z0-9.-]+(?::\d+)?\/)?[a-z0-9._/-]+:([A-Za-z0-9._-]+)(?:@sha256:[0-9a-f]{64})?$/.exec(image);
  assert.ok(m, `${where}: image ${image} has no tag`);
  assert.notEqual(m[1], 'latest', `${where}: image ${image} is not pinned`);
  assert.match(m[1]!, /\d/, `${where}: tag of ${image} is not a version`);
}

describe('docker-compose.yml: the production stack', () => {
  it("has exactly the stack's services", () => {
    assert.deepEqual(Object.keys(compose.services).sort(), [...SERVICES].sort());
  });

  it("pins every image to a version, the Dockerfile's base images too", () => {
    for (const [name, s] of Object.entries(compose.services)) {
      assert.ok(s.image, `${name} names no image`);
      assertPinned(s.image, name);
    }
    const froms = dockerfile.instructions.filter((i) => i.keyword === 'FROM').map((i) => resolveArgs(i.args.split(/\s+/)[0]!));
    assert.ok(froms.length >= 2, 'the Dockerfile has a build and a runtime stage');
    for (const image of froms) assertPinned(image, 'Dockerfile FROM');
  });

  it("needs the secrets' paths from .env (no default), and the example .env names every variable", () => {
    const vars = variablesOf(composeText);
    for (const name of ['KUBECONFIG_FILE', 'SSH_KEY_FILE', 'KNOWN_HOSTS_FILE', 'DB_PASSWORD_FILE']) {
      const v = vars.find((x) => x.name === name);
      assert.ok(v?.required, `${name} must be required (\${${name}:?…}), not defaulted to a path that may not hold it`);
    }
    for (const v of vars) {
      if (!v.hasDefault) assert.ok(exampleEnv[v.name] !== undefined, `deploy/compose.env.example does not set ${v.name}`);
    }
    for (const name of Object.keys(exampleEnv))
      assert.ok(
        vars.some((v) => v.name === name),
        `deploy/compose.env.example sets ${name}, which compose never reads`,
      );
    assert.throws(() => mountsOf(service('worker'), {}), MissingVariable, "without .env the worker's mounts cannot resolve");
  });

  it("gives every long-running service a health check, Postgres's with pg_isready, the worker's on its metrics port", () => {
    for (const [name, s] of Object.entries(compose.services)) {
      if (s.restart === 'no') continue;
      const test = s.healthcheck?.test;
      assert.ok(test && !s.healthcheck?.disable && asText(test) !== 'NONE', `${name} has no health check`);
      assert.ok(Array.isArray(test) && ['CMD', 'CMD-SHELL'].includes(test[0]!), `${name}: health check test must be CMD or CMD-SHELL`);
    }
    assert.match(asText(service('postgresql').healthcheck?.test), /\bpg_isready\b/);
    assert.match(asText(service('temporal').healthcheck?.test), /\bnc -z 127\.0\.0\.1 7233\b/);
    const metricsPort = String(environmentOf(service('worker')).SKEWLESS_METRICS_ADDRESS ?? '')
      .split(':')
      .pop();
    assert.ok(metricsPort, 'the worker sets SKEWLESS_METRICS_ADDRESS');
    assert.match(asText(service('worker').healthcheck?.test), new RegExp(`127\\.0\\.0\\.1:${metricsPort}/metrics`));
  });

  it('starts each service after what it needs, with conditions that can be met', () => {
    const want: Record<string, Record<string, string>> = {
      'temporal-schema': { postgresql: 'service_healthy' },
      temporal: { 'temporal-schema': 'service_completed_successfully' },
      'temporal-setup': { temporal: 'service_healthy' },
      'temporal-ui': { temporal: 'service_healthy' },
      worker: { temporal: 'service_healthy', 'temporal-setup': 'service_completed_successfully' },
    };
    for (const [name, s] of Object.entries(compose.services)) {
      const deps = dependsOn(s);
      assert.deepEqual(deps, want[name] ?? {}, `${name}'s depends_on`);
      for (const [dep, condition] of Object.entries(deps)) {
        const target = service(dep);
        if (condition === 'service_healthy')
          assert.ok(target.healthcheck?.test, `${name} waits for ${dep} to be healthy, which has no health check`);
        if (condition === 'service_completed_successfully') assert.equal(target.restart, 'no', `${dep} runs once: restart must be "no"`);
      }
    }
  });

  it('registers exactly the search attributes the workflows set', () => {
    const setup = service('temporal-setup');
    const script = interpolate(asText(setup.command), {});
    assert.match(asText(setup.entrypoint) + script, /temporal operator search-attribute create/);
    const registered = [...script.matchAll(/--name[= ](\S+)\s+(?:\\\s*)?--type[= ](\S+)/g)].map((m) => `${m[1]}=${m[2]!.toUpperCase()}`);
    const expected = ALL_SEARCH_ATTRIBUTES.map((a) => `${a.name}=${a.type.toUpperCase()}`);
    assert.deepEqual([...registered].sort(), [...expected].sort());
    assert.equal(environmentOf(setup).TEMPORAL_ADDRESS, 'temporal:7233');
  });

  it('mounts every credential read-only and writes only to the snapshots volume', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const m of mountsOf(s, exampleEnv)) {
        if (m.type === 'bind') assert.ok(m.readOnly, `${name}: bind mount ${m.source} → ${m.target} must be read-only`);
        else assert.ok(compose.volumes && m.source in compose.volumes, `${name}: volume ${m.source} is not declared`);
      }
    }
    const worker = mountsOf(service('worker'), exampleEnv);
    const writable = worker.filter((m) => !m.readOnly);
    assert.deepEqual(
      writable.map((m) => `${m.type}:${m.target}`),
      ['volume:/var/lib/skewless/snapshots'],
    );
    for (const target of [
      '/etc/skewless/clusters',
      '/etc/skewless/secrets/kubeconfig',
      '/etc/skewless/secrets/ssh/id_ed25519',
      '/etc/skewless/secrets/ssh/known_hosts',
    ]) {
      assert.ok(
        worker.some((m) => m.target === target && m.readOnly),
        `worker: ${target} is not mounted read-only`,
      );
    }
    // The database password: a compose secret (a read-only file) taken from a path in .env.
    assert.match(compose.secrets?.['db-password']?.file ?? '', /^\$\{DB_PASSWORD_FILE:\?/);
    for (const name of ['postgresql', 'temporal-schema', 'temporal'])
      assert.deepEqual(service(name).secrets, ['db-password'], `${name} reads the password from its secret`);
  });

  it('puts no secret in an environment value', () => {
    const secretName = /PASSWORD|PASSWD|PWD|SECRET|TOKEN|API_KEY|PRIVATE|CREDENTIAL/;
    for (const [name, s] of Object.entries(compose.services)) {
      for (const [key, value] of Object.entries(environmentOf(s))) {
        if (secretName.test(key)) {
          assert.match(key, /_FILE$/, `${name}: ${key} holds a secret in the environment; use a file`);
          assert.match(value, /^\/run\/secrets\//, `${name}: ${key} must point at a mounted secret`);
        }
        assert.doesNotMatch(value, /-----BEGIN|[A-Za-z0-9+/]{40,}/, `${name}: ${key}'s value looks like key material`);
      }
    }
    // Temporal's image reads the password from POSTGRES_PWD only: the entrypoint exports it from the secret.
    const entry = interpolate(asText(service('temporal').entrypoint), {});
    assert.match(entry, /POSTGRES_PWD="\$\(cat \/run\/secrets\/db-password\)"/);
    assert.match(entry, /exec \/etc\/temporal\/entrypoint\.sh$/, 'the plain server, not auto-setup');
    // temporal-sql-tool reads it from SQL_PASSWORD, exported the same way by the schema job.
    assert.match(
      interpolate(asText(service('temporal-schema').command), {}),
      /export SQL_PASSWORD="\$\(cat \/run\/secrets\/db-password\)"/,
    );
  });

  it('sets up both schemas before the server starts, and the namespace once it listens', () => {
    const schema = interpolate(asText(service('temporal-schema').command), {});
    for (const step of ['create-database --defaultdb postgres', 'setup-schema -v 0.0', 'update-schema -d'])
      assert.ok(schema.includes(`temporal-sql-tool --db "$name" ${step}`), `the schema job runs ${step}`);
    assert.match(schema, /for db in temporal:temporal temporal_visibility:visibility;/);
    assert.equal(environmentOf(service('temporal-schema')).SQL_HOST, 'postgresql');
    assert.equal(environmentOf(service('temporal')).POSTGRES_SEEDS, 'postgresql');
    const setup = interpolate(asText(service('temporal-setup').command), {});
    assert.match(setup, /temporal operator namespace create --namespace default --retention 720h/);
    assert.ok(!Object.values(compose.services).some((s) => /auto-setup/.test(s.image ?? '')), 'no service runs the deprecated auto-setup');
  });

  it("publishes only the CLI's, the UI's and the metrics' ports, on the loopback interface", () => {
    const published: Record<number, string> = {};
    for (const [name, s] of Object.entries(compose.services)) {
      for (const p of portsOf(s)) {
        assert.equal(p.hostIp, '127.0.0.1', `${name}: port ${p.published} is open on every interface`);
        published[p.published] = name;
      }
    }
    assert.deepEqual(published, PUBLISHED);
    const metrics = environmentOf(service('worker')).SKEWLESS_METRICS_ADDRESS;
    assert.ok(metrics, 'the worker serves metrics');
    assert.ok(
      portsOf(service('worker')).some((p) => String(p.target) === metrics.split(':').at(-1)),
      'the metrics port is the one SKEWLESS_METRICS_ADDRESS listens on',
    );
    assert.match(metrics, /^0\.0\.0\.0:/, 'inside the container the metrics listen beyond loopback, or the published port reaches nothing');
  });

  it('gives the worker only variables the worker reads, and the loader takes them as meant', () => {
    const env = environmentOf(service('worker'));
    const read = envNamesReadByWorker();
    assert.ok(read.has('TEMPORAL_ADDRESS') && read.has('SKEWLESS_CLUSTERS_DIR'), `the scan of worker/ found ${[...read].join(', ')}`);
    for (const key of Object.keys(env)) {
      assert.ok(read.has(key), `worker: ${key} is read by nothing in worker/`);
    }
    const connection = connectionSettings({}, env);
    assert.equal(connection.address, 'temporal:7233');
    assert.equal(connection.namespace, env.TEMPORAL_NAMESPACE ?? 'default');
    assert.equal(connection.tls, false, 'plaintext on the compose network (docs/deployment.md for TLS)');
    const config = workerConfig({}, env);
    assert.equal(config.taskQueue, env.SKEWLESS_TASK_QUEUE);
    assert.ok(
      mountsOf(service('worker'), exampleEnv).some((m) => m.target === config.clustersDir && m.readOnly),
      'SKEWLESS_CLUSTERS_DIR is the mounted clusters directory',
    );
  });
});

describe('the worker image: Dockerfile and .dockerignore', () => {
  const stages = [...new Set(dockerfile.instructions.map((i) => i.stage))].filter((s) => s !== '');
  const build = stages[0]!;
  const runtime = stages.at(-1)!;
  const of = (stage: string, keyword: string) => dockerfile.instructions.filter((i) => i.stage === stage && i.keyword === keyword);

  it("is what compose builds for the worker, tagged with the package's version", () => {
    const worker = service('worker');
    assert.ok(
      worker.build === '.' ||
        (typeof worker.build === 'object' &&
          (worker.build.context ?? '.') === '.' &&
          (worker.build.dockerfile ?? 'Dockerfile') === 'Dockerfile'),
    );
    const { version } = JSON.parse(readRepoFile('package.json')) as { version: string };
    assert.equal(worker.image, `skewless-worker:${version}`);
  });

  it('copies sources that exist and that .dockerignore lets into the context', () => {
    for (const copy of dockerfile.instructions.filter((i) => i.keyword === 'COPY')) {
      const parts = copyParts(copy.args);
      if (parts.from) {
        assert.ok(stages.includes(parts.from), `COPY --from=${parts.from}: no such stage`);
        continue;
      }
      for (const source of parts.sources) {
        assert.ok(existsSync(join(repoRoot, source)), `COPY ${source}: not in the repository`);
        assert.ok(!dockerIgnored(source, dockerignore), `COPY ${source}: excluded by .dockerignore`);
      }
    }
  });

  it('copies into the build everything tsconfig.json compiles', () => {
    const include = (JSON.parse(readRepoFile('tsconfig.json')) as { include: string[] }).include;
    const copied = new Set(
      of(build, 'COPY')
        .flatMap((i) => copyParts(i.args).sources)
        .map((s) => s.replace(/\/$/, '')),
    );
    for (const dir of include) assert.ok(copied.has(dir), `the build stage does not copy ${dir}/, which tsconfig.json includes`);
    assert.ok(copied.has('tsconfig.json') && copied.has('package.json') && copied.has('package-lock.json'));
  });

  it("runs the build through package.json's scripts, and installs production dependencies only at runtime", () => {
    const scripts = (JSON.parse(readRepoFile('package.json')) as { scripts: Record<string, string> }).scripts;
    const runs = dockerfile.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    const named = runs.flatMap((r) => [...r.matchAll(/\bnpm run(?:-script)? ([A-Za-z0-9:_-]+)/g)].map((m) => m[1]!));
    assert.ok(named.includes('build'), 'the build stage runs npm run build');
    for (const script of named) assert.ok(scripts[script], `npm run ${script}: no such script in package.json`);
    assert.ok(
      of(build, 'RUN').some((r) => /\bnpm ci\b/.test(r.args)),
      'the build installs from the lock file',
    );
    const runtimeInstall = of(runtime, 'RUN').find((r) => /\bnpm ci\b/.test(r.args));
    assert.match(runtimeInstall?.args ?? '', /--omit=dev/, 'the runtime installs production dependencies only');
    // npm ci would run the project's prepare (a tsc build) where there is no TypeScript: skip scripts.
    if (scripts.prepare) for (const r of runs.filter((x) => /\bnpm ci\b/.test(x))) assert.match(r, /--ignore-scripts/);
  });

  it('runs as a user that is not root', () => {
    const user = of(runtime, 'USER').at(-1)?.args;
    assert.ok(user && !['root', '0', '0:0'].includes(user), `runtime user ${user ?? '(none: root)'}`);
  });

  it('starts a file the build produces, with everything it imports copied into the runtime', () => {
    const cmd = execForm(of(runtime, 'CMD').at(-1)?.args ?? '');
    assert.equal(cmd[0], 'node');
    const workdir = of(runtime, 'WORKDIR').at(-1)?.args ?? '/';
    const entry = posix.join(workdir, cmd[1]!);
    // Map each runtime path to the repository: COPY --from=build /src/dist/x → dist/x, COPY x → x.
    const buildDir = of(build, 'WORKDIR').at(-1)?.args ?? '/';
    const mapped: { inImage: string; inRepo: string }[] = of(runtime, 'COPY').flatMap((c) => {
      const p = copyParts(c.args);
      const dest = posix.resolve(workdir, p.dest);
      return p.sources.map((s) => ({
        inImage: p.sources.length === 1 && !p.dest.endsWith('/') ? dest : posix.join(dest, posix.basename(s)),
        inRepo: p.from ? posix.relative(buildDir, posix.resolve(buildDir, s)) : s,
      }));
    });
    const toRepo = (inImage: string): string | undefined => {
      const hit = mapped.find((m) => inImage === m.inImage || inImage.startsWith(`${m.inImage}/`));
      return hit ? join(repoRoot, hit.inRepo, relative(hit.inImage, inImage)) : undefined;
    };
    const entryFile = toRepo(entry);
    assert.ok(entryFile, `${entry} is not copied into the runtime image`);
    assert.ok(existsSync(entryFile), `${cmd[1]} is not produced by npm run build (${entryFile})`);
    // Every relative import reachable from the entry point lies in what the runtime copies, and every
    // package it imports is a production dependency (the runtime installs no others).
    const { dependencies } = JSON.parse(readRepoFile('package.json')) as { dependencies: Record<string, string> };
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (imageFile: string) => {
      if (seen.has(imageFile)) return;
      seen.add(imageFile);
      const repoFile = toRepo(imageFile);
      assert.ok(repoFile && existsSync(repoFile), `${imageFile} (imported at runtime) is not in the runtime image`);
      const code = readFileSync(repoFile, 'utf8');
      // Statements only (an import or export at the start of a line, or a dynamic import()): a comment
      // saying "from's minor" must not read as an import.
      for (const m of code.matchAll(
        /^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm,
      )) {
        const spec = (m[1] ?? m[2] ?? m[3])!;
        if (spec.startsWith('.')) visit(posix.resolve(posix.dirname(imageFile), spec));
        else if (!spec.startsWith('node:'))
          packages.add(
            spec
              .split('/')
              .slice(0, spec.startsWith('@') ? 2 : 1)
              .join('/'),
          );
      }
    };
    visit(entry);
    assert.ok(seen.size > 20, `the import walk saw ${seen.size} files`);
    assert.ok(packages.has('@temporalio/worker'), `packages imported: ${[...packages].join(', ')}`);
    for (const p of packages) assert.ok(dependencies[p], `${p} is imported at runtime but is not a production dependency`);
    // The workflows are bundled at start from their compiled sources: they must be there too.
    assert.ok(toRepo(posix.join(workdir, 'dist/workflows/index.js')), 'dist/workflows is not copied');
  });

  it('keeps local state and credentials out of the build context', () => {
    for (const path of [
      '.env',
      'node_modules',
      '.git',
      'dist',
      '.skewless',
      'test-output',
      'secrets/id_ed25519',
      'deploy/clusters/prod.yaml',
    ]) {
      assert.ok(dockerIgnored(path, dockerignore), `.dockerignore lets ${path} into the context`);
    }
    for (const path of ['deploy/clusters/example.yaml', 'worker/main.ts', 'package-lock.json']) {
      assert.ok(!dockerIgnored(path, dockerignore), `.dockerignore keeps ${path} out`);
    }
  });
});

describe("deploy/clusters/example.yaml through the worker's own loader, as compose mounts it", () => {
  const root = tempDir('compose');
  after(() => rmSync(root, { recursive: true, force: true }));

  it("loads, names only mounted files, and passes the worker's start-up check", () => {
    const env = environmentOf(service('worker'));
    const mounts = mountsOf(service('worker'), exampleEnv);
    const clustersMount = mounts.find((m) => m.target === env.SKEWLESS_CLUSTERS_DIR);
    assert.ok(clustersMount, 'SKEWLESS_CLUSTERS_DIR is a mount');
    assert.equal(
      resolve(repoRoot, clustersMount.source),
      join(repoRoot, 'deploy/clusters'),
      "the default clusters directory is the example's",
    );
    const files = readdirSync(join(repoRoot, 'deploy/clusters')).filter((f) => f.endsWith('.yaml'));
    assert.deepEqual(files, ['example.yaml']);
    const text = readRepoFile('deploy/clusters/example.yaml');
    const config = parseClusterConfig(text, 'deploy/clusters/example.yaml');
    assert.equal(config.name, 'example');

    const mountOf = (path: string) => mounts.find((m) => path === m.target || path.startsWith(`${m.target}/`));
    for (const [what, path] of [
      ['kubeconfig', config.kubeconfig],
      ['ssh.privateKeyPath', config.ssh.privateKeyPath],
      ['ssh.knownHostsPath', config.ssh.knownHostsPath],
    ] as const) {
      const m = mountOf(path);
      assert.ok(m && m.type === 'bind' && m.readOnly, `${what} ${path} is not on a read-only mount of the worker`);
      assert.notEqual(m.target, env.SKEWLESS_CLUSTERS_DIR, `${what} must not live in the clusters directory`);
    }
    const snapshots = mountOf(config.snapshots.dir);
    assert.ok(
      snapshots && !snapshots.readOnly && snapshots.type === 'volume',
      `snapshots.dir ${config.snapshots.dir} is not on the writable volume`,
    );

    // The container's file tree under `root`: the clusters directory as mounted, and stand-ins for
    // the secrets (a real ed25519 key, since the loader parses it); paths rewritten mount by mount.
    const inRoot = (p: string) => join(root, p);
    for (const m of mounts) {
      if (m.target === env.SKEWLESS_CLUSTERS_DIR) continue;
      if (m.type === 'volume') mkdirSync(inRoot(m.target), { recursive: true });
    }
    mkdirSync(dirname(inRoot(config.ssh.privateKeyPath)), { recursive: true });
    mkdirSync(dirname(inRoot(config.kubeconfig)), { recursive: true });
    writeFileSync(inRoot(config.ssh.privateKeyPath), ssh2.utils.generateKeyPairSync('ed25519').private, { mode: 0o600 });
    writeFileSync(inRoot(config.kubeconfig), 'apiVersion: v1\nkind: Config\n');
    writeFileSync(
      inRoot(config.ssh.knownHostsPath),
      '10.0.0.11 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE1lZ2FzdGFuZGluIGZvciB0aGUgdGVzdCBvbmx5\n',
    );
    const clustersDir = inRoot(env.SKEWLESS_CLUSTERS_DIR!);
    mkdirSync(clustersDir, { recursive: true });
    let rewritten = text;
    for (const m of [...mounts].sort((a, b) => b.target.length - a.target.length)) {
      rewritten = rewritten.replace(
        new RegExp(`(?<=[\\s:])${m.target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=[/\\s]|$)`, 'gm'),
        inRoot(m.target),
      );
    }
    assert.notEqual(rewritten, text);
    writeFileSync(join(clustersDir, 'example.yaml'), rewritten);
    assert.deepEqual(checkClustersDir(clustersDir), ['example']);

    // And the check bites: without the key file the worker would not start.
    rmSync(inRoot(config.ssh.privateKeyPath));
    assert.throws(() => checkClustersDir(clustersDir), /ssh\.privateKeyPath/);
  });
});
