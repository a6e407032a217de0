import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PG_USER, type Postgres } from './postgres.js';

/**
 * Temporal's two databases, as temporal-sql-tool sets them up (what auto-setup does in the compose
 * stack): created and given the base schema on first start, then `update-schema` to the newest version
 * the server's schema files name, at every start: a no-op when current, the migration after `up` on a
 * newer server.
 */

const run = promisify(execFile);

export const DATABASES = [
  { name: 'temporal', schema: 'temporal' },
  { name: 'temporal_visibility', schema: 'visibility' },
] as const;

export interface SchemaOptions {
  sqlTool: string;
  /** `<dir>/postgresql/v12/{temporal,visibility}/versioned`. */
  schemaDir: string;
  port: number;
  password: string;
}

export interface SchemaState {
  database: string;
  /** The version before this start ('' for a database created now) and after. */
  from: string;
  to: string;
}

async function sqlTool(o: SchemaOptions, database: string, args: string[]): Promise<void> {
  // The password goes through the tool's variable: an argument would show in `ps`.
  const env = {
    ...process.env,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: '127.0.0.1',
    SQL_PORT: String(o.port),
    SQL_USER: PG_USER,
    SQL_PASSWORD: o.password,
    SQL_DATABASE: database,
  };
  try {
    await run(o.sqlTool, args, { env });
  } catch (err) {
    const out = `${(err as { stdout?: string }).stdout ?? ''}${(err as { stderr?: string }).stderr ?? ''}`.trim();
    throw new Error(`temporal-sql-tool ${args[0]} on ${database} failed: ${out.split('\n').slice(-3).join(' ') || String(err)}`);
  }
}

/** Creates, sets up or migrates both databases; returns each one's version before and after. */
export async function ensureSchemas(pg: Postgres, o: SchemaOptions): Promise<SchemaState[]> {
  const states: SchemaState[] = [];
  for (const db of DATABASES) {
    if ((await pg.query('postgres', `SELECT 1 FROM pg_database WHERE datname = '${db.name}'`)) === '') {
      await sqlTool(o, db.name, ['create-database', '--defaultdb', 'postgres']);
    }
    // A start that died between the two steps left the database without the versioning table.
    if ((await pg.query(db.name, "SELECT to_regclass('schema_version') IS NOT NULL")) !== 't') {
      await sqlTool(o, db.name, ['setup-schema', '-v', '0.0']);
    }
    const from = await currentVersion(pg, db.name);
    await sqlTool(o, db.name, ['update-schema', '-d', join(o.schemaDir, 'postgresql', 'v12', db.schema, 'versioned')]);
    states.push({ database: db.name, from: from === '0.0' ? '' : from, to: await currentVersion(pg, db.name) });
  }
  return states;
}

export function currentVersion(pg: Postgres, database: string): Promise<string> {
  return pg.query(database, 'SELECT curr_version FROM schema_version LIMIT 1');
}
