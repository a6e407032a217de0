import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

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
  return (await freePortIn(low, Math.min(high, HOST_PORTS_LOW))) ?? listenAnywhere();
}

/** A random port of [low, high) that can be listened on now, or undefined after 50 tries. */
export async function freePortIn(low: number, high: number): Promise<number | undefined> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await canListen(port)) return port;
  }
  return undefined;
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
