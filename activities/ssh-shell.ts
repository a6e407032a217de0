// RemoteShell over ssh2: one connection per activity execution and host (the commands of one attempt
// share it; the next attempt, or the next step, meets a host that rebooted or rotated its key afresh),
// strict known_hosts checking, typed failures for the workflow's retry policy.
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { Client, type ClientChannel, type ConnectConfig } from 'ssh2';
import type { AddressResolver, ExecOptions, ExecResult, RemoteShell } from './cluster-access.js';
import { readPrivateKey, type ClusterConfig } from './cluster-config.js';
import { ErrorType } from './errors.js';
import { fingerprint, hostKeyAlgorithms, keyAccepted, knownHostsName, readHostKeyPolicy } from './host-known-hosts.js';
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

/** A ready, host-key-verified connection to `node`. */
async function connect(config: ClusterConfig, resolve: AddressResolver, node: string, signal: AbortSignal | undefined): Promise<Client> {
  if (signal?.aborted) throw signal.reason ?? new Error('cancelled');
  const { host, port } = await resolve(node);
  const policy = configFile(config.ssh.knownHostsPath, 'ssh.knownHostsPath', () =>
    readHostKeyPolicy(config.ssh.knownHostsPath, knownHostsName(host, port)),
  );
  const privateKey = readPrivateKey(config.ssh.privateKeyPath); // parsed too: a bad key is ClusterConfigInvalid, not retried
  const algorithms = hostKeyAlgorithms(policy).filter((a) => SUPPORTED_HOST_KEYS.has(a));
  let seen: string | undefined;
  const client = new Client();
  const ready = new Promise<void>((ok, fail) => {
    const onAbort = (): void => fail(signal?.reason ?? new Error('cancelled'));
    signal?.addEventListener('abort', onAbort, { once: true });
    client.once('ready', () => {
      signal?.removeEventListener('abort', onAbort);
      ok();
    });
    // A persistent listener: an 'error' with none would crash the worker.
    client.on('error', (err: Error & { code?: string; level?: string }) => {
      signal?.removeEventListener('abort', onAbort);
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
 * How long a shared connection stays open with no command on it. Measured (bench/): a handshake
 * costs ~100 ms of two CPUs' time, and an install's eight commands paid it eight times.
 */
const IDLE_MS = 2_000;

interface Shared {
  client: Promise<Client>;
  users: number;
  idle?: NodeJS.Timeout;
}

/** Connections shared by the calls that carry the same cancellation signal: one activity execution's. */
const sharedBySignal = new WeakMap<AbortSignal, Map<string, Shared>>();

/**
 * Runs `use` on a connection to `node`: the activity execution's shared one when the call carries its
 * cancellation signal, else one of its own, closed afterwards. A shared connection is dropped when it
 * closes (a reboot), when the activity is cancelled, and after IDLE_MS unused.
 */
async function withConnection<T>(
  config: ClusterConfig,
  resolve: AddressResolver,
  node: string,
  signal: AbortSignal | undefined,
  use: (client: Client) => Promise<T>,
): Promise<T> {
  if (!signal) {
    const client = await connect(config, resolve, node, signal);
    try {
      return await use(client);
    } finally {
      close(client);
    }
  }
  let byNode = sharedBySignal.get(signal);
  if (!byNode) {
    const map = (byNode = new Map<string, Shared>());
    sharedBySignal.set(signal, map);
    signal.addEventListener(
      'abort',
      () => {
        for (const s of map.values()) void s.client.then(close, () => undefined);
        map.clear();
      },
      { once: true },
    );
  }
  const map = byNode;
  let shared = map.get(node);
  if (!shared) {
    const entry: Shared = { client: connect(config, resolve, node, signal), users: 0 };
    shared = entry;
    map.set(node, entry);
    entry.client.then(
      (c) => c.once('close', () => map.get(node) === entry && map.delete(node)),
      () => map.get(node) === entry && map.delete(node),
    );
  }
  const entry = shared;
  entry.users++;
  clearTimeout(entry.idle);
  const client = await entry.client.catch((err: unknown) => {
    entry.users--;
    throw err;
  });
  const listening = new Set(client.listeners('close'));
  try {
    return await use(client);
  } finally {
    // `use` listens for the connection going away while it runs; not after.
    for (const l of client.listeners('close')) if (!listening.has(l)) client.removeListener('close', l as () => void);
    if (--entry.users === 0) {
      entry.idle = setTimeout(() => {
        if (map.get(node) === entry) map.delete(node);
        close(client);
      }, IDLE_MS);
      entry.idle.unref();
    }
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

export function createSshShell(config: ClusterConfig, resolveAddress: AddressResolver): RemoteShell {
  return {
    exec(node: string, argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
      let line: string;
      try {
        line = commandLine(argv, { env: options.env, sudo: options.sudo === true && config.ssh.sudo });
      } catch (err) {
        return Promise.reject(
          ApplicationFailure.create({
            type: ErrorType.Invalid,
            nonRetryable: true,
            message: `command for ${node}: ${(err as Error).message}`,
          }),
        );
      }
      const what = argv.slice(0, 3).join(' ');
      return withConnection(config, resolveAddress, node, options.signal, (client) => {
        let channel: ClientChannel | undefined;
        return bounded<ExecResult>(
          ({ done, failed }) => {
            client.exec(line, (err, stream) => {
              if (err) return failed(unreachable(node, `cannot open a channel: ${err.message}`));
              channel = stream;
              let stdout = '';
              let stderr = '';
              let exitCode: number | undefined;
              stream.on('data', (d: Buffer) => void (stdout.length < MAX_OUTPUT && (stdout += d.toString('utf8'))));
              stream.stderr.on('data', (d: Buffer) => void (stderr.length < MAX_OUTPUT && (stderr += d.toString('utf8'))));
              stream.on('exit', (code: number | null, signalName?: string) => {
                exitCode =
                  typeof code === 'number'
                    ? code
                    : 128 + (signalName ? ((constants.signals as Record<string, number>)[`SIG${signalName}`] ?? 0) : 127);
              });
              stream.on('close', () => {
                // No exit status: the connection dropped (a reboot, a reset) before the command finished.
                if (exitCode === undefined) failed(unreachable(node, `connection lost while running '${what}'`));
                else done({ exitCode, stdout, stderr });
              });
            });
            client.once('close', () => failed(unreachable(node, `connection lost while running '${what}'`)));
          },
          options.timeoutMs,
          options.signal,
          () =>
            ApplicationFailure.create({
              type: ErrorType.HostCommandTimedOut,
              message: `'${what}' on ${node} did not finish within ${Math.round(options.timeoutMs / 1000)} s; channel closed`,
            }),
          () => channel?.close(),
        );
      });
    },

    download(node, remotePath, localPath, options): Promise<void> {
      const temp = `${localPath}.part-${process.pid}-${randomBytes(4).toString('hex')}`;
      mkdirSync(dirname(localPath), { recursive: true });
      return withConnection(config, resolveAddress, node, options.signal, (client) => {
        let close: () => void = () => undefined;
        return bounded<void>(
          ({ done, failed }) => {
            client.sftp((err, sftp) => {
              if (err) return failed(unreachable(node, `no SFTP: ${err.message}`));
              close = () => sftp.end();
              sftp.fastGet(remotePath, temp, { concurrency: 8 }, (e) => {
                if (!e) return done();
                const code = (e as { code?: number }).code;
                // SFTP status 2 (no such file) and 3 (permission denied) will not change on retry.
                failed(
                  code === 2 || code === 3
                    ? ApplicationFailure.create({
                        type: ErrorType.HostCommandFailed,
                        nonRetryable: true,
                        message: `cannot copy ${remotePath} off ${node}: ${e.message}`,
                      })
                    : unreachable(node, `copying ${remotePath}: ${e.message}`),
                );
              });
            });
            client.once('close', () => failed(unreachable(node, `connection lost while copying ${remotePath}`)));
          },
          options.timeoutMs,
          options.signal,
          () =>
            ApplicationFailure.create({
              type: ErrorType.HostCommandTimedOut,
              message: `copying ${remotePath} off ${node} did not finish within ${Math.round(options.timeoutMs / 1000)} s`,
            }),
          () => close(),
        );
      }).then(
        () => renameSync(temp, localPath),
        (err: unknown) => {
          rmSync(temp, { force: true });
          throw err;
        },
      );
    },
    upload(node, localPath, remotePath, options): Promise<void> {
      return withConnection(config, resolveAddress, node, options.signal, (client) => {
        let close: () => void = () => undefined;
        return bounded<void>(
          ({ done, failed }) => {
            client.sftp((err, sftp) => {
              if (err) return failed(unreachable(node, `no SFTP: ${err.message}`));
              close = () => sftp.end();
              // 0600 from the start: a snapshot holds the cluster's secrets.
              sftp.fastPut(localPath, remotePath, { concurrency: 8, mode: 0o600 }, (e) => {
                if (!e) return done();
                const code = (e as { code?: number }).code;
                failed(
                  code === 2 || code === 3
                    ? ApplicationFailure.create({
                        type: ErrorType.HostCommandFailed,
                        nonRetryable: true,
                        message: `cannot copy ${localPath} onto ${node} at ${remotePath}: ${e.message}`,
                      })
                    : unreachable(node, `copying to ${remotePath}: ${e.message}`),
                );
              });
            });
            client.once('close', () => failed(unreachable(node, `connection lost while copying to ${remotePath}`)));
          },
          options.timeoutMs,
          options.signal,
          () =>
            ApplicationFailure.create({
              type: ErrorType.HostCommandTimedOut,
              message: `copying onto ${node} at ${remotePath} did not finish within ${Math.round(options.timeoutMs / 1000)} s`,
            }),
          () => close(),
        );
      });
    },
  };
}
