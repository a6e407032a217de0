// Machine providers for blue/green node pools: the small interface the pool activities call to
// create and tear down machines, and its two implementations, the simulation's machine API (HTTP on
// loopback, a bearer token read from a file on the worker) and user commands (argv, no shell).
// Room is left for a Cluster API provider (a MachineDeployment scale).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ApplicationFailure } from '@temporalio/activity';
import { labelsText, type ProvisioningConfig } from './cluster-config.js';
import { ErrorType } from './errors.js';
import { stderrTail } from './host-commands.js';

export interface MachineRequest {
  /** The Node name the machine registers as. */
  node: string;
  /** kubelet, kubeadm and kubectl at this Kubernetes version (`1.34.2`). */
  version: string;
  pool: string;
  /** The labels its kubelet registers the Node with (the pool's selector terms). */
  labels: Record<string, string>;
}

/**
 * Creates and deletes machines. Both calls are idempotent: create of a machine that exists and
 * delete of one that is gone succeed (an activity retried after a worker crash calls them again).
 * create returns once the machine is asked for; the caller waits for its Node to join.
 */
export interface MachineProvider {
  readonly name: ProvisioningConfig['provider'];
  create(request: MachineRequest, signal?: AbortSignal): Promise<void>;
  delete(request: { node: string; pool: string }, signal?: AbortSignal): Promise<void>;
}

const failed = (message: string, nonRetryable: boolean, details?: unknown): ApplicationFailure =>
  ApplicationFailure.create({
    type: ErrorType.ProvisionFailed,
    message,
    nonRetryable,
    ...(details === undefined ? {} : { details: [details] }),
  });

const configInvalid = (message: string): ApplicationFailure =>
  ApplicationFailure.create({ type: ErrorType.ClusterConfigInvalid, message, nonRetryable: true });

/** The provider a cluster's `provisioning:` names. */
export function machineProvider(config: ProvisioningConfig): MachineProvider {
  return config.provider === 'simulation' ? simulationProvider(config) : commandProvider(config);
}

/**
 * The simulation's machine API (sim/machine-api.ts): POST /machines, DELETE /machines/<name>, with
 * `Authorization: Bearer <token>`. The token is read from tokenFile at each call, never logged, never
 * in an error. A 4xx is the simulation refusing (not retried); a 5xx or no answer is retried.
 */
function simulationProvider(config: Extract<ProvisioningConfig, { provider: 'simulation' }>): MachineProvider {
  const token = (): string => {
    let text: string;
    try {
      text = readFileSync(config.tokenFile, 'utf8').trim();
    } catch (err) {
      throw configInvalid(`cannot read provisioning.tokenFile ${config.tokenFile}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
    if (!/^[A-Za-z0-9._~+/=-]{16,}$/.test(text)) throw configInvalid(`provisioning.tokenFile ${config.tokenFile} does not hold a token`);
    return text;
  };
  const call = async (method: string, path: string, what: string, body: unknown, signal?: AbortSignal): Promise<void> => {
    let res: Response;
    try {
      res = await fetch(`${config.endpoint}${path}`, {
        method,
        headers: { authorization: `Bearer ${token()}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(120_000)]) : AbortSignal.timeout(120_000),
      });
    } catch (err) {
      if (err instanceof ApplicationFailure) throw err;
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      throw failed(`${what}: the simulation's machine API at ${config.endpoint} did not answer (${cause})`, false);
    }
    if (res.ok) return;
    const text = (await res.text().catch(() => '')).split('\n')[0]?.slice(0, 300) ?? '';
    throw failed(`${what}: the simulation's machine API answered HTTP ${res.status}${text ? `: ${text}` : ''}`, res.status < 500);
  };
  return {
    name: 'simulation',
    create: (r, signal) =>
      call('POST', '/machines', `create machine ${r.node}`, { name: r.node, version: r.version, pool: r.pool, labels: r.labels }, signal),
    delete: (r, signal) => call('DELETE', `/machines/${encodeURIComponent(r.node)}`, `delete machine ${r.node}`, undefined, signal),
  };
}

/** Replaces the placeholders in each word; the result stays one word whatever a value holds. */
export function fillPlaceholders(argv: readonly string[], values: Record<'node' | 'version' | 'pool' | 'labels', string>): string[] {
  return argv.map((word) => word.replace(/\{(node|version|pool|labels)\}/g, (_, k: keyof typeof values) => values[k]));
}

/**
 * What a hook runs with: the worker's environment less Temporal's and skewless's own settings (the
 * Temporal API key, TLS material and payload key stay with the worker), plus the request.
 */
function hookEnvironment(values: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TEMPORAL_|SKEWLESS_)/.test(k)));
  for (const [k, v] of Object.entries(values)) env[`SKEWLESS_${k.toUpperCase()}`] = v;
  return env;
}

/** What a finished hook said: exit code or signal, and the tail of its output. */
export interface HookResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

const MAX_OUTPUT = 64 << 10;

/**
 * Runs argv without a shell, in a process group of its own; past timeoutMs or on `signal` the group
 * is killed (TERM, then KILL 5 s later), so a shell script's children go too. Once the program has
 * exited, output still held open by something it left running is waited for 1 s, no longer.
 */
export function runHook(argv: readonly string[], env: NodeJS.ProcessEnv, timeoutMs: number, signal?: AbortSignal): Promise<HookResult> {
  return new Promise((resolve, reject) => {
    const [program, ...args] = argv as [string, ...string[]];
    const child = spawn(program, args, { shell: false, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-MAX_OUTPUT);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    let exited = false;
    let killer: NodeJS.Timeout | undefined;
    let drain: NodeJS.Timeout | undefined;
    const killGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, sig);
      } catch {
        // the group is gone already
      }
    };
    const stop = () => {
      killGroup('SIGTERM');
      killer = setTimeout(() => killGroup('SIGKILL'), 5_000);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    const onAbort = () => stop();
    signal?.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    const finish = (code: number | null, sig: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(drain);
      if (!timedOut && !signal?.aborted) clearTimeout(killer);
      signal?.removeEventListener('abort', onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      if (signal?.aborted) reject(signal.reason ?? new Error('cancelled'));
      else resolve({ code, signal: sig, output, timedOut });
    };
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(configInvalid(`cannot run ${program}: ${err.code ?? err.message}`));
    });
    child.once('exit', (code, sig) => {
      exited = true;
      drain = setTimeout(() => finish(code, sig), 1_000);
    });
    child.once('close', (code, sig) => {
      if (exited || code !== null || sig !== null) finish(code, sig);
    });
  });
}

/**
 * provisioning.create / .delete, run on the worker host. A non-zero exit or a timeout is
 * ProvisionFailed, not retried (the operator looks at the machine), with the output's last lines;
 * the commands must be idempotent (a retried activity may run create for a machine that exists).
 */
function commandProvider(config: Extract<ProvisioningConfig, { provider: 'command' }>): MachineProvider {
  const timeoutMs = config.commandTimeoutSeconds * 1000;
  const hook = async (which: 'create' | 'delete', values: Record<'node' | 'version' | 'pool' | 'labels', string>, signal?: AbortSignal) => {
    const argv = fillPlaceholders(config[which], values);
    const result = await runHook(argv, hookEnvironment(values), timeoutMs, signal);
    if (result.code === 0 && !result.timedOut) return;
    const tail = stderrTail(result.output);
    const how = result.timedOut
      ? `did not finish within ${config.commandTimeoutSeconds} s (provisioning.commandTimeoutSeconds)`
      : result.code === null
        ? `was killed by ${result.signal}`
        : `exited ${result.code}`;
    throw failed(`provisioning.${which} for ${values.node} (${argv[0]}) ${how}${tail ? `: ${tail.split('\n').at(-1)}` : ''}`, true, {
      node: values.node,
      command: argv.join(' '),
      exitCode: result.code,
      outputTail: tail,
    });
  };
  return {
    name: 'command',
    create: (r, signal) => hook('create', { node: r.node, version: r.version, pool: r.pool, labels: labelsText(r.labels) }, signal),
    delete: (r, signal) => hook('delete', { node: r.node, version: '', pool: r.pool, labels: '' }, signal),
  };
}
