import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ManagedProcess } from '../tooling/managed-process.js';

/**
 * The stack's own PostgreSQL cluster: initialised in `<state>/postgresql` on first start, listening on
 * 127.0.0.1 only, password (SCRAM) authentication for the superuser `temporal`, as the compose file's
 * postgres image sets it up. PostgreSQL refuses to run as root: under root the cluster belongs to, and
 * runs as, the `postgres` user Debian's package creates.
 */

const run = promisify(execFile);
export const PG_USER = 'temporal';

export interface PostgresOptions {
  bin: string;
  stateDir: string;
  port: number;
  password: string;
}

export interface Identity {
  uid: number;
  gid: number;
  name: string;
  /** Another user than this process's: programs start through setpriv. */
  switches: boolean;
}

/** Who runs the cluster: this user, or `postgres` when this is root. */
async function identity(): Promise<Identity> {
  const me = userInfo();
  if (me.uid !== 0) return { uid: me.uid, gid: me.gid, name: me.username, switches: false };
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
  try {
    return { uid: await id('-u'), gid: await id('-g'), name: 'postgres', switches: true };
  } catch {
    throw new Error(
      "PostgreSQL refuses to run as root and there is no `postgres` user (Debian's postgresql package creates it): run as another user or create it",
    );
  }
}

/** The first dir above `dir` that `who` may not enter (execute bit for its owner, group or others). */
export function closedAncestor(dir: string, who: Pick<Identity, 'uid' | 'gid'>): string | undefined {
  const parents: string[] = [];
  for (let d = dirname(resolve(dir)); ; d = dirname(d)) {
    parents.unshift(d);
    if (d === dirname(d)) break;
  }
  return parents.find((d) => {
    const st = statSync(d);
    const bit = st.uid === who.uid ? 0o100 : st.gid === who.gid ? 0o010 : 0o001;
    return (st.mode & bit) === 0;
  });
}

export class Postgres {
  readonly dataDir: string;
  readonly socketDir: string;
  readonly logFile: string;
  private process: ManagedProcess | undefined;
  private who: Identity | undefined;

  constructor(private readonly o: PostgresOptions) {
    this.dataDir = join(o.stateDir, 'postgresql', 'data');
    this.socketDir = join(o.stateDir, 'postgresql', 'run');
    this.logFile = join(o.stateDir, 'logs', 'postgresql.log');
  }

  get pid(): number | undefined {
    return this.process?.running ? this.process.pid : undefined;
  }

  whenExited(): Promise<void> {
    return this.process?.whenExited() ?? Promise.resolve();
  }

  get user(): string | undefined {
    return this.who?.name;
  }

  /** `initdb` once; a data dir already there is kept (and migrated by nothing: the major is pinned). */
  async init(): Promise<boolean> {
    const who = (this.who ??= await identity());
    if (existsSync(join(this.dataDir, 'PG_VERSION'))) return false;
    const own = (dir: string, mode: number) => {
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, mode);
      chownSync(dir, who.uid, who.gid);
    };
    // The cluster's user must reach its dirs: the state dir may be a private temporary one.
    chmodSync(this.o.stateDir, 0o711);
    const closed = closedAncestor(this.o.stateDir, who);
    if (closed)
      throw new Error(
        `PostgreSQL runs as ${who.name}, which cannot enter ${closed} (mode ${(statSync(closed).mode & 0o777).toString(8)}): use a state dir it can reach, or chmod o+x ${closed}`,
      );
    own(join(this.o.stateDir, 'postgresql'), 0o700);
    own(this.dataDir, 0o700);
    own(this.socketDir, 0o700);
    const pwfile = join(this.o.stateDir, 'postgresql', 'initdb-password');
    writeFileSync(pwfile, this.o.password, { mode: 0o600 });
    chownSync(pwfile, who.uid, who.gid);
    const initdb = [
      '-D',
      this.dataDir,
      '-U',
      PG_USER,
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
      '--no-instructions',
    ];
    try {
      const [command, args] = who.switches
        ? ['/usr/bin/setpriv', [`--reuid=${who.uid}`, `--regid=${who.gid}`, '--clear-groups', '--', join(this.o.bin, 'initdb'), ...initdb]]
        : [join(this.o.bin, 'initdb'), initdb];
      await run(command, args, { cwd: this.o.stateDir });
    } catch (err) {
      throw new Error(
        `initdb in ${this.dataDir} failed: ${((err as { stderr?: string }).stderr ?? String(err)).trim().split('\n').slice(-2).join(' ')}`,
      );
    } finally {
      writeFileSync(pwfile, '');
    }
    return true;
  }

  async start(timeoutMs = 60_000): Promise<void> {
    const who = (this.who ??= await identity());
    mkdirSync(dirname(this.logFile), { recursive: true });
    this.process ??= new ManagedProcess(
      'postgresql',
      join(this.o.bin, 'postgres'),
      [
        '-D',
        this.dataDir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-p',
        String(this.o.port),
        '-k',
        this.socketDir,
        // Temporal's pools: 20 + 2 per service and database, four services, the schema tool.
        '-c',
        'max_connections=300',
      ],
      this.logFile,
      process.env,
      { ...(who.switches ? { user: { uid: who.uid, gid: who.gid } } : {}), stopSignal: 'SIGINT' },
    );
    this.process.start();
    const deadline = Date.now() + timeoutMs;
    while (!(await this.ready())) {
      this.process.assertAlive();
      if (Date.now() > deadline)
        throw new Error(
          `PostgreSQL did not accept connections on 127.0.0.1:${this.o.port} within ${timeoutMs / 1000} s; see ${this.logFile}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async ready(): Promise<boolean> {
    try {
      await run(join(this.o.bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(this.o.port), '-t', '2']);
      return true;
    } catch {
      return false;
    }
  }

  /** One value from SQL as the superuser (`psql -tA`); '' when the query returns no row. */
  async query(database: string, sql: string): Promise<string> {
    const { stdout } = await run(
      join(this.o.bin, 'psql'),
      ['-h', '127.0.0.1', '-p', String(this.o.port), '-U', PG_USER, '-d', database, '-tAc', sql],
      {
        env: { ...process.env, PGPASSWORD: this.o.password, PGCONNECT_TIMEOUT: '5' },
      },
    );
    return stdout.trim();
  }

  /** Fast shutdown (SIGINT): clients are disconnected, a checkpoint is written. */
  stop(): Promise<void> {
    return this.process?.stop(30_000) ?? Promise.resolve();
  }

  /**
   * Immediate shutdown (SIGQUIT): no checkpoint, the next start recovers from the WAL, as after a crash.
   * `SIGKILL`: the crash itself, the postmaster and every backend at once (as the OOM killer or a lost
   * machine leaves it; a backend left alone would hold the shared memory the next start needs).
   */
  async crash(signal: 'SIGQUIT' | 'SIGKILL' = 'SIGQUIT'): Promise<void> {
    const pid = this.process?.pid;
    if (signal === 'SIGKILL' && pid !== undefined) for (const child of childPids(pid)) killQuietly(child);
    await (this.process?.kill(signal) ?? Promise.resolve());
    if (signal === 'SIGKILL' && pid !== undefined) for (const child of childPids(pid)) killQuietly(child);
  }
}

/** The direct children of `pid` (Linux's /proc/<pid>/task/<pid>/children); none once it is gone. */
function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone already
  }
}
