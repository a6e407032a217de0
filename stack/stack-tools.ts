import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The programs the stack runs and where they come from: PostgreSQL from Debian's packages, the Temporal
 * server, its SQL schema tool and the UI server built from the Go module proxy, at the versions in
 * tooling/versions.json (the ones docker-compose.yml names: test/deploy/stack-versions.test.ts).
 * Each ensure script installs or builds once and prints where the result is.
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const script = (name: string) => join(repoRoot, 'scripts', name);

export interface StackVersions {
  temporalServer: string;
  temporalUi: string;
  postgresMajor: string;
}

export function stackVersions(): StackVersions {
  const all = JSON.parse(readFileSync(join(repoRoot, 'tooling', 'versions.json'), 'utf8')) as Record<string, string>;
  const pick = (key: keyof StackVersions): string => {
    const value = all[key];
    if (typeof value !== 'string' || value === '') throw new Error(`tooling/versions.json has no ${key}`);
    return value;
  };
  return { temporalServer: pick('temporalServer'), temporalUi: pick('temporalUi'), postgresMajor: pick('postgresMajor') };
}

export interface StackTools {
  /** PostgreSQL's bin dir (postgres, initdb, pg_isready, psql). */
  pgBin: string;
  temporalServer: string;
  sqlTool: string;
  /** The schema files of the server's version: `<dir>/postgresql/v12/{temporal,visibility}`. */
  schemaDir: string;
  /** Undefined when the UI is not wanted. */
  uiServer?: string;
}

const ensure = (name: string): string =>
  execFileSync('bash', [script(name)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

/** Installs or builds what is missing (progress on stderr), then names every program. */
export function ensureStackTools(o: { ui: boolean }): StackTools {
  const pgBin = ensure('ensure-postgres.sh');
  const serverDir = ensure('ensure-temporal-server.sh');
  return {
    pgBin,
    temporalServer: join(serverDir, 'temporal-server'),
    sqlTool: join(serverDir, 'temporal-sql-tool'),
    schemaDir: join(serverDir, 'schema'),
    ...(o.ui ? { uiServer: ensure('ensure-temporal-ui.sh') } : {}),
  };
}
