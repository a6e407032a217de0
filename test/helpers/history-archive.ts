// The archive of every workflow history a test run produces, for the secret scan that runs last
// (test/zz-secret-scan.test.ts). `npm test` points SKEWLESS_HISTORY_ARCHIVE at a fresh directory;
// without it nothing is archived (a single test file run while developing).
//
//   <archive>/histories/<label>/<workflow id>@<run id>.json.gz   {workflowId, runId, workflowType, status, history}
//   <archive>/servers/<label>.json                               what one server held when it was archived
//   <archive>/secrets/<label>.json                               fingerprints of a test world's secrets (never the secrets)
//
// Dev servers started with startDevServer archive on teardown; other paths call archiveHistories
// (a server they run themselves), archivePersistedServer (a server's database file, after the fact)
// and recordWorldSecrets (a simulation's state directory, before it is removed).
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';
import { freePort } from '../../tooling/free-port.js';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';
import { fingerprintSecret, secretMaterial } from './secret-scan.js';

export const ARCHIVE_ENV = 'SKEWLESS_HISTORY_ARCHIVE';

/** The run's archive directory, or undefined when this run keeps none. */
export const archiveDir = (): string | undefined => process.env[ARCHIVE_ENV] || undefined;

type WorkflowService = Connection['workflowService'];

let labels = 0;
/** A label unique in this run: what, which test file, this process. */
export function archiveLabel(what: string): string {
  const file = process.argv.find((a) => /\.test\.js$/.test(a));
  const from = file ? basename(file, '.test.js') : 'run';
  return `${from}-${what}-${process.pid}-${++labels}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

const safe = (s: string): string => s.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 150);

/** Every execution the namespace lists (every run, open or closed), listed until two listings agree. */
async function listExecutions(
  service: WorkflowService,
  namespace: string,
): Promise<{ workflowId: string; runId: string; type: string; status: string }[]> {
  const listOnce = async () => {
    const out = new Map<string, { workflowId: string; runId: string; type: string; status: string }>();
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await service.listWorkflowExecutions({ namespace, pageSize: 1000, ...(nextPageToken ? { nextPageToken } : {}) });
      for (const e of page.executions ?? []) {
        const workflowId = e.execution?.workflowId;
        const runId = e.execution?.runId;
        if (workflowId && runId) out.set(runId, { workflowId, runId, type: e.type?.name ?? '?', status: String(e.status ?? '?') });
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    return out;
  };
  // Visibility trails the history by a moment: a run started just now may not be listed yet.
  let seen = await listOnce();
  for (let i = 0; i < 6; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const again = await listOnce();
    const grew = [...again.keys()].some((k) => !seen.has(k));
    for (const [k, v] of again) seen.set(k, v);
    if (!grew) break;
  }
  seen = new Map([...seen].sort(([a], [b]) => a.localeCompare(b)));
  return [...seen.values()];
}

async function fetchHistory(
  service: WorkflowService,
  namespace: string,
  workflowId: string,
  runId: string,
): Promise<temporal.api.history.v1.IHistory> {
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await service.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1000,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { events };
}

export interface ArchiveResult {
  label: string;
  histories: number;
  events: number;
}

/**
 * Writes the full history of every execution in `namespace` (raw, as the server holds it: payloads
 * still encoded) to the run's archive. Call it before stopping a Temporal server a test started;
 * a no-op without SKEWLESS_HISTORY_ARCHIVE (unless `dir` is given).
 */
export async function archiveHistories(
  from: { workflowService: WorkflowService },
  label: string,
  options: { namespace?: string; dir?: string } = {},
): Promise<ArchiveResult> {
  const dir = options.dir ?? archiveDir();
  if (!dir) return { label, histories: 0, events: 0 };
  const namespace = options.namespace ?? 'default';
  const target = join(dir, 'histories', safe(label));
  mkdirSync(target, { recursive: true });
  let events = 0;
  const executions = await listExecutions(from.workflowService, namespace);
  for (const e of executions) {
    const history = await fetchHistory(from.workflowService, namespace, e.workflowId, e.runId);
    events += history.events?.length ?? 0;
    const record = {
      workflowId: e.workflowId,
      runId: e.runId,
      workflowType: e.type,
      status: e.status,
      history: JSON.parse(historyToJSON(history as never)) as unknown,
    };
    writeFileSync(join(target, `${safe(e.workflowId)}@${e.runId}.json.gz`), gzipSync(JSON.stringify(record)));
  }
  const result = { label, histories: executions.length, events };
  mkdirSync(join(dir, 'servers'), { recursive: true });
  writeFileSync(join(dir, 'servers', `${safe(label)}.json`), `${JSON.stringify({ ...result, namespace, at: new Date().toISOString() })}\n`);
  return result;
}

/**
 * Archives what a stopped dev server persisted (`--db-filename`): starts the Temporal binary on that
 * file on free ports, archives, and stops it. For tests whose server ran in another process (the demo).
 */
export async function archivePersistedServer(db: string, label: string, options: { dir?: string } = {}): Promise<ArchiveResult> {
  const dir = options.dir ?? archiveDir();
  if (!dir) return { label, histories: 0, events: 0 };
  const port = await freePort();
  const child = spawn(
    ensureTemporalBinary(),
    ['server', 'start-dev', '--db-filename', db, '--ip', '127.0.0.1', '--port', String(port), '--headless', '--log-level', 'error'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => void (stderr.length < 4000 && (stderr += d.toString())));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    const deadline = Date.now() + 60_000;
    let connection: Connection | undefined;
    while (!connection) {
      if (child.exitCode !== null) throw new Error(`the Temporal server on ${db} exited: ${stderr.trim().split('\n').at(-1) ?? ''}`);
      try {
        connection = await Connection.connect({ address: `127.0.0.1:${port}`, connectTimeout: 1000 });
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    try {
      return await archiveHistories(connection, label, { dir });
    } finally {
      await connection.close();
    }
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  }
}

/** Files under `root` small enough to be credentials (skips databases, snapshots, logs). */
function* smallFiles(root: string): Generator<string> {
  let entries: string[];
  try {
    entries = readdirSync(root);
  } catch {
    return;
  }
  for (const name of entries) {
    const path = join(root, name);
    let s;
    try {
      s = statSync(path);
    } catch {
      continue;
    }
    if (s.isDirectory()) yield* smallFiles(path);
    else if (s.isFile() && s.size > 0 && s.size <= 64 * 1024) yield path;
  }
}

/**
 * Records fingerprints of the secrets under a test world's state directory (SSH private keys, host
 * keys, the PKI's keys, kubeconfigs' client keys and tokens): hashes of fixed-length windows, from
 * which no secret can be read back. Call it when the world starts and again before its directory is
 * removed (a fault may have rotated keys meanwhile): calls with the same label add to one record.
 */
export function recordWorldSecrets(stateDir: string, label: string, options: { dir?: string } = {}): number {
  const dir = options.dir ?? archiveDir();
  if (!dir) return 0;
  const record = join(dir, 'secrets', `${safe(label)}.json`);
  let files: Record<string, string[]> = {};
  try {
    files = (JSON.parse(readFileSync(record, 'utf8')) as { files: Record<string, string[]> }).files;
  } catch {
    // the first call for this label
  }
  for (const path of smallFiles(stateDir)) {
    let text: string;
    try {
      text = readFileSync(path, 'latin1');
    } catch {
      continue;
    }
    if (!/PRIVATE KEY|client-key-data|token:|password:/.test(text)) continue;
    const hashes = secretMaterial(text).flatMap(fingerprintSecret);
    const name = relative(stateDir, path);
    if (hashes.length) files[name] = [...new Set([...(files[name] ?? []), ...hashes])];
  }
  mkdirSync(join(dir, 'secrets'), { recursive: true });
  writeFileSync(record, `${JSON.stringify({ label, files })}\n`);
  return Object.keys(files).length;
}

export interface ArchivedHistory {
  label: string;
  file: string;
  workflowId: string;
  runId: string;
  workflowType: string;
  status: string;
  history: { events?: unknown[] };
}

/** Every archived history, server by server. */
export function* readArchivedHistories(dir: string): Generator<ArchivedHistory> {
  const root = join(dir, 'histories');
  let labelsIn: string[];
  try {
    labelsIn = readdirSync(root).sort();
  } catch {
    return;
  }
  for (const label of labelsIn) {
    for (const name of readdirSync(join(root, label))
      .filter((f) => f.endsWith('.json.gz'))
      .sort()) {
      const file = join(root, label, name);
      const record = JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as Omit<ArchivedHistory, 'label' | 'file'>;
      yield { ...record, label, file };
    }
  }
}

/** The world-secret fingerprints of the run: window hash → where it came from (`<label>: <file>`). */
export function readWorldSecrets(dir: string): Map<string, string> {
  const known = new Map<string, string>();
  let names: string[];
  try {
    names = readdirSync(join(dir, 'secrets'));
  } catch {
    return known;
  }
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const { label, files } = JSON.parse(readFileSync(join(dir, 'secrets', name), 'utf8')) as {
      label: string;
      files: Record<string, string[]>;
    };
    for (const [file, hashes] of Object.entries(files)) for (const h of hashes) known.set(h, `${label}: ${file}`);
  }
  return known;
}
