import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A TCP port on loopback that was free a moment ago, chosen *below* the kernel's ephemeral range.
 * A port the kernel hands out for `listen(0)` comes from the same range as the source ports of
 * outgoing connections, so in the seconds between picking it and spawning the server (an apiserver
 * starting first, other tests running beside) a client socket could take it and the server would
 * exit with "address already in use". Below the range only another listener can collide. And below
 * the simulated hosts' SSH ports (sim/hosts/ports.ts): a host that restarts takes its stored port
 * again, which an apiserver of a test running beside must not have taken meanwhile.
 */
export async function freePort(): Promise<number> {
  const [low, high] = belowEphemeralRange();
  return (await freePortIn(low, Math.min(high, HOST_PORTS_LOW), { reserve: true })) ?? listenAnywhere();
}

/**
 * A random port of [low, high) that can be listened on now, or undefined after 50 tries. With `reserve`,
 * also one no process of this machine was handed in the last RESERVED_MS: a world picks a dozen ports
 * before it starts its servers, and the test files beside it pick theirs meanwhile.
 */
export async function freePortIn(low: number, high: number, o: { reserve?: boolean } = {}): Promise<number | undefined> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if ((await canListen(port)) && (!o.reserve || reserved(port))) return port;
  }
  return undefined;
}

/** Long enough for a picked port's server to start (then it is taken by listening). */
const RESERVED_MS = 120_000;
const RESERVATIONS = join(tmpdir(), 'skewless-ports');

/** Claims `port` for RESERVED_MS across processes (a file created exclusively); false if someone holds it. */
function reserved(port: number): boolean {
  const file = join(RESERVATIONS, String(port));
  try {
    if (Date.now() - statSync(file).mtimeMs < RESERVED_MS) return false;
    rmSync(file, { force: true });
  } catch {
    mkdirSync(RESERVATIONS, { recursive: true });
  }
  try {
    writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
    return true;
  } catch {
    return false; // another process claimed it between the check and the write
  }
}

const FALLBACK_EPHEMERAL_START = 32768;
/** Where sim/hosts/ports.ts starts the hosts' SSH ports. */
export const HOST_PORTS_LOW = 20_000;
const LOWEST = 10_000;

function belowEphemeralRange(): [number, number] {
  let start = FALLBACK_EPHEMERAL_START;
  try {
    const [first] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    const parsed = Number(first);
    if (Number.isInteger(parsed) && parsed > LOWEST + 1000) start = parsed;
  } catch {
    // Not Linux: the IANA dynamic range starts at 49152, so the fallback is below it as well.
  }
  return [LOWEST, start];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function listenAnywhere(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
