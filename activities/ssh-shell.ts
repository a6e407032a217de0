// RemoteShell over ssh2: the shell's connections are pooled per host, port and user (ssh-pool.ts) and
// shared by every command to that host, across activity executions, until they have been idle for a
// while; strict known_hosts checking each time a connection is made; typed failures for the workflow's
// retry policy. A connection a command was cut short on (timeout, cancellation) or could not open a
// channel on is given to nobody else; a reused one that turns out broken is replaced once.
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { Client, type ClientChannel, type ConnectConfig, type SFTPWrapper } from 'ssh2';
import type { AddressResolver, ExecOptions, ExecResult, RemoteShell } from './cluster-access.js';
import { readPrivateKey, type ClusterConfig } from './cluster-config.js';
import { ErrorType } from './errors.js';
import { fingerprint, hostKeyAlgorithms, keyAccepted, knownHostsName, readHostKeyPolicy } from './host-known-hosts.js';
import { SshPool } from './ssh-pool.js';
import { commandLine } from './shell-words.js';

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const SUPPORTED_HOST_KEYS = new Set([
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
]);
/** Output kept per stream: enough for any tool we parse, bounded so a runaway command cannot exhaust memory. */
const MAX_OUTPUT = 8 << 20;

const unreachable = (node: string, why: string): ApplicationFailure =>
  ApplicationFailure.create({ type: ErrorType.HostUnreachable, message: `host ${node} unreachable: ${why}` });

/** Reads a file the cluster configuration names; a missing or unreadable one is a configuration error, not a retry. */
function configFile<T>(path: string, field: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw ApplicationFailure.create({
      type: ErrorType.ClusterConfigInvalid,
      nonRetryable: true,
      message: `cannot read ${field} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    });
  }
}

/** A ready, host-key-verified connection to `node` at `address` (bounded by ssh.connectTimeoutSeconds, shared: no caller's signal). */
async function connect(config: ClusterConfig, address: { host: string; port: number }, node: string): Promise<Client> {
  const { host, port } = address;
  const policy = configFile(config.ssh.knownHostsPath, 'ssh.knownHostsPath', () =>
    readHostKeyPolicy(config.ssh.knownHostsPath, knownHostsName(host, port)),
  );
  const privateKey = readPrivateKey(config.ssh.privateKeyPath); // parsed too: a bad key is ClusterConfigInvalid, not retried
  const algorithms = hostKeyAlgorithms(policy).filter((a) => SUPPORTED_HOST_KEYS.has(a));
  let seen: string | undefined;
  const client = new Client();
  const ready = new Promise<void>((ok, fail) => {
    client.once('ready', () => ok());
    // A persistent listener: an 'error' with none would crash the worker.
    client.on('error', (err: Error & { code?: string; level?: string }) => {
      if (seen !== undefined) {
        fail(
          ApplicationFailure.create({
            type: ErrorType.HostKeyMismatch,
            nonRetryable: true,
            message: `host ${node} (${knownHostsName(host, port)}) presented host key ${seen}, which ${policy.accepted.length ? 'does not match' : 'is not in'} ${config.ssh.knownHostsPath}; refusing to connect`,
          }),
        );
      } else if (err.level === 'handshake' && /host key/i.test(err.message)) {
        // The host offers no key of the types known_hosts lists for it: a reinstalled host, most likely.
        fail(
          ApplicationFailure.create({
            type: ErrorType.HostKeyMismatch,
            nonRetryable: true,
            message: `host ${node} (${knownHostsName(host, port)}) offers no host key of the types ${config.ssh.knownHostsPath} lists for it (${algorithms.join(', ') || 'none'}): ${err.message}`,
          }),
        );
      } else if (err.level === 'client-authentication') {
        fail(
          ApplicationFailure.create({
            type: ErrorType.Forbidden,
            nonRetryable: true,
            message: `host ${node} refused the SSH key of user ${config.ssh.user}`,
          }),
        );
      } else if (err.level === 'client-timeout') fail(unreachable(node, `no SSH handshake within ${config.ssh.connectTimeoutSeconds} s`));
      else if (err.code && UNREACHABLE_CODES.has(err.code)) fail(unreachable(node, err.code));
      else fail(unreachable(node, err.message));
    });
    client.once('close', () => fail(unreachable(node, 'connection closed during the handshake')));
  });
  const options: ConnectConfig = {
    host,
    port,
    username: config.ssh.user,
    privateKey,
    readyTimeout: config.ssh.connectTimeoutSeconds * 1000,
    keepaliveInterval: 15_000,
    hostVerifier: (key: Buffer) => {
      if (keyAccepted(policy, key)) return true;
      seen = fingerprint(key);
      return false;
    },
    ...(algorithms.length
      ? { algorithms: { serverHostKey: algorithms as NonNullable<ConnectConfig['algorithms']>['serverHostKey'] } }
      : {}),
  };
  client.connect(options);
  try {
    await ready;
  } catch (err) {
    close(client);
    throw err;
  }
  client.removeAllListeners('close');
  // Commands are small request/reply exchanges: Nagle's algorithm would hold each back for an ACK.
  client.setNoDelay(true);
  return client;
}

function close(client: Client): void {
  client.removeAllListeners('close');
  client.on('error', () => undefined); // late socket errors after we are done are not news
  client.end();
}

/**
 * How long a pooled connection stays open with no command on it, unless the shell's creator says
 * otherwise (the worker process: WORKER_SSH_IDLE_MS). Measured (bench/): a handshake costs ~100 ms
 * of two CPUs' time, and an install's eight commands paid it eight times. An open connection keeps a
 * process alive (its socket and ssh2's keepalive timer): short here, so a CLI or test that never
 * closes its shell does not linger.
 */
export const DEFAULT_IDLE_MS = 2_000;

/** A command that never started on its connection (no channel): safe to run again on another one. */
class NotStarted extends Error {
  constructor(readonly failure: ApplicationFailure) {
    super(failure.message);
  }
}

/** Ends `work` early on timeout or cancellation, running `stop` (close the channel) first. */
function bounded<T>(
  work: (settle: { done(v: T): void; failed(e: unknown): void }) => void,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  onTimeout: () => unknown,
  stop: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let finished = false;
    const finish = (fn: () => void): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const onAbort = (): void =>
      finish(() => {
        stop();
        reject(signal?.reason ?? new Error('cancelled'));
      });
    const timer = setTimeout(
      () =>
        finish(() => {
          stop();
          reject(onTimeout());
        }),
      timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    work({ done: (v) => finish(() => resolve(v)), failed: (e) => finish(() => reject(e)) });
  });
}

/**
 * `bounded` work on a pooled connection: it fails when the connection closes under it (NotStarted
 * while `started()` is false: the command never ran), its close listener goes when it ends, and work
 * cut short by the timeout or the signal marks the connection broken (the channel's state is unknown).
 */
function onConnection<T>(
  client: Client,
  o: {
    work: (settle: { done(v: T): void; failed(e: unknown): void }) => void;
    started: () => boolean;
    lost: () => ApplicationFailure;
    timeoutMs: number;
    signal: AbortSignal | undefined;
    onTimeout: () => unknown;
    stop: () => void;
    broken: () => void;
  },
): Promise<T> {
  let onClose: (() => void) | undefined;
  return bounded<T>(
    (settle) => {
      onClose = () => settle.failed(o.started() ? o.lost() : new NotStarted(o.lost()));
      client.once('close', onClose);
      o.work(settle);
    },
    o.timeoutMs,
    o.signal,
    o.onTimeout,
    () => {
      o.broken();
      o.stop();
    },
  ).finally(() => onClose && client.removeListener('close', onClose));
}

export interface SshShell extends RemoteShell {
  /** Closes the idle connections; those in use close when their commands end. */
  close(): void;
}

export function createSshShell(config: ClusterConfig, resolveAddress: AddressResolver, options: { idleMs?: number } = {}): SshShell {
  const pool = new SshPool(options.idleMs ?? DEFAULT_IDLE_MS);
  const withConnection = pooledConnections(config, resolveAddress, pool);
  return {
    close: () => pool.close(),
    exec: (node, argv, options) => execOnNode(withConnection, config, node, argv, options),
    download(node, remotePath, localPath, options): Promise<void> {
      const temp = `${localPath}.part-${process.pid}-${randomBytes(4).toString('hex')}`;
      mkdirSync(dirname(localPath), { recursive: true });
      return withConnection(node, options.signal, (client, broken) =>
        sftpCopy(client, broken, node, options, {
          copy: (sftp, cb) => sftp.fastGet(remotePath, temp, { concurrency: 8 }, cb),
          refused: `cannot copy ${remotePath} off ${node}`,
          copying: `copying ${remotePath}`,
          timedOut: `copying ${remotePath} off ${node}`,
        }),
      ).then(
        () => renameSync(temp, localPath),
        (err: unknown) => {
          rmSync(temp, { force: true });
          throw err;
        },
      );
    },
    upload(node, localPath, remotePath, options): Promise<void> {
      return withConnection(node, options.signal, (client, broken) =>
        sftpCopy(client, broken, node, options, {
          // 0600 from the start: a snapshot holds the cluster's secrets.
          copy: (sftp, cb) => sftp.fastPut(localPath, remotePath, { concurrency: 8, mode: 0o600 }, cb),
          refused: `cannot copy ${localPath} onto ${node} at ${remotePath}`,
          copying: `copying to ${remotePath}`,
          timedOut: `copying onto ${node} at ${remotePath}`,
        }),
      );
    },
  };
}

/**
 * Runs `use` on the pooled connection to `node`. `use` calls `broken()` when it cut a command short
 * (its channel's state is unknown: nobody else gets the connection), and throws NotStarted when no
 * channel opened: on a reused connection (closed by the host meanwhile) that is tried once more on a new one.
 */
type WithConnection = <T>(
  node: string,
  signal: AbortSignal | undefined,
  use: (client: Client, broken: () => void) => Promise<T>,
) => Promise<T>;

function pooledConnections(config: ClusterConfig, resolveAddress: AddressResolver, pool: SshPool): WithConnection {
  /** node → pool key of its last connection: a node with an open connection is not looked up again (an API read without a `nodes:` address). */
  const keyOf = new Map<string, string>();
  return async (node, signal, use) => {
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw signal.reason ?? new Error('cancelled');
      let key = keyOf.get(node);
      let address: { host: string; port: number } | undefined;
      if (key === undefined || !pool.has(key)) {
        address = await resolveAddress(node);
        key = `${config.ssh.user}@${address.host}:${address.port}`;
        keyOf.set(node, key);
      }
      const at = address;
      const lease = await pool.lease(key, async () => connect(config, at ?? (await resolveAddress(node)), node), signal);
      let broken = false;
      try {
        return await use(lease.client, () => void (broken = true));
      } catch (err) {
        if (!(err instanceof NotStarted)) throw err;
        broken = true;
        if (!(lease.reused && attempt === 0)) throw err.failure;
      } finally {
        lease.release(broken);
      }
    }
  };
}

/** `argv` on `node` as one command line (sudo when asked and the configuration allows it): its exit code and output. */
function execOnNode(
  withConnection: WithConnection,
  config: ClusterConfig,
  node: string,
  argv: readonly string[],
  options: ExecOptions,
): Promise<ExecResult> {
  let line: string;
  try {
    line = commandLine(argv, { env: options.env, sudo: options.sudo === true && config.ssh.sudo });
  } catch (err) {
    return Promise.reject(
      ApplicationFailure.create({ type: ErrorType.Invalid, nonRetryable: true, message: `command for ${node}: ${(err as Error).message}` }),
    );
  }
  const what = argv.slice(0, 3).join(' ');
  return withConnection(node, options.signal, (client, broken) => {
    let channel: ClientChannel | undefined;
    return onConnection<ExecResult>(client, {
      work: ({ done, failed }) =>
        client.exec(line, (err, stream) => {
          if (err) return failed(new NotStarted(unreachable(node, `cannot open a channel: ${err.message}`)));
          channel = stream;
          collectOutput(stream, (result) => {
            // No exit status: the connection dropped (a reboot, a reset) before the command finished.
            if (result.exitCode === undefined) failed(unreachable(node, `connection lost while running '${what}'`));
            else done({ ...result, exitCode: result.exitCode });
          });
        }),
      started: () => channel !== undefined,
      lost: () => unreachable(node, `connection lost while running '${what}'`),
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      onTimeout: () =>
        ApplicationFailure.create({
          type: ErrorType.HostCommandTimedOut,
          message: `'${what}' on ${node} did not finish within ${Math.round(options.timeoutMs / 1000)} s; channel closed`,
        }),
      stop: () => channel?.close(),
      broken,
    });
  });
}

/** A command's output (each stream up to MAX_OUTPUT) and exit status (128 + the signal's number when a signal ended it), once its channel closes. */
function collectOutput(stream: ClientChannel, closed: (r: { exitCode: number | undefined; stdout: string; stderr: string }) => void): void {
  let stdout = '';
  let stderr = '';
  let exitCode: number | undefined;
  stream.on('data', (d: Buffer) => void (stdout.length < MAX_OUTPUT && (stdout += d.toString('utf8'))));
  stream.stderr.on('data', (d: Buffer) => void (stderr.length < MAX_OUTPUT && (stderr += d.toString('utf8'))));
  stream.on('exit', (code: number | null, signalName?: string) => {
    exitCode =
      typeof code === 'number' ? code : 128 + (signalName ? ((constants.signals as Record<string, number>)[`SIG${signalName}`] ?? 0) : 127);
  });
  stream.on('close', () => closed({ exitCode, stdout, stderr }));
}

/**
 * One SFTP copy (`copy`: fastGet or fastPut) on a pooled connection. SFTP status 2 (no such file) and
 * 3 (permission denied) will not change on retry: non-retryable; anything else reads as the host unreachable.
 */
function sftpCopy(
  client: Client,
  broken: () => void,
  node: string,
  options: { timeoutMs: number; signal?: AbortSignal },
  o: { copy: (sftp: SFTPWrapper, cb: (e?: Error | null) => void) => void; refused: string; copying: string; timedOut: string },
): Promise<void> {
  let close: (() => void) | undefined;
  return onConnection<void>(client, {
    work: ({ done, failed }) =>
      client.sftp((err, sftp) => {
        if (err) return failed(new NotStarted(unreachable(node, `no SFTP: ${err.message}`)));
        close = () => sftp.end();
        o.copy(sftp, (e) => {
          if (!e) return done();
          const code = (e as { code?: number }).code;
          failed(
            code === 2 || code === 3
              ? ApplicationFailure.create({ type: ErrorType.HostCommandFailed, nonRetryable: true, message: `${o.refused}: ${e.message}` })
              : unreachable(node, `${o.copying}: ${e.message}`),
          );
        });
      }),
    started: () => close !== undefined,
    lost: () => unreachable(node, `connection lost while ${o.copying}`),
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    onTimeout: () =>
      ApplicationFailure.create({
        type: ErrorType.HostCommandTimedOut,
        message: `${o.timedOut} did not finish within ${Math.round(options.timeoutMs / 1000)} s`,
      }),
    stop: () => close?.(),
    broken,
  });
}
