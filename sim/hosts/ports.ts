// Ports for the SSH endpoints. New hosts get a random free port BELOW Linux's ephemeral range
// (32768-60999), so the kernel never hands a stored host port to some outgoing connection while the
// simulator is down, and a restart can take the same port again.
import { HOST_PORTS_LOW } from '../../tooling/free-port.js';
import { sleep } from './host-machine.js';

// Above every other port the simulation listens on (sim/free-port.ts stays below LOW).
const LOW = HOST_PORTS_LOW;
const HIGH = 32000;

const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

/**
 * Listens on `preferred` (retrying briefly: the previous process may still be closing it), or on a
 * random free port not in `taken` (which it joins). Resolves with the port listened on.
 */
export async function listenOnFreePort(
  listen: (port: number) => Promise<number>,
  preferred: number | undefined,
  taken: Set<number>,
): Promise<number> {
  if (preferred !== undefined) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await listen(preferred);
      } catch (err) {
        if (code(err) !== 'EADDRINUSE' || attempt >= 30) {
          throw new Error(`sim: cannot listen on port ${preferred}, which the state dir assigns to this host: ${(err as Error).message}`, {
            cause: err,
          });
        }
        await sleep(100);
      }
    }
  }
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (taken.has(port)) continue;
    taken.add(port);
    try {
      return await listen(port);
    } catch (err) {
      if (code(err) !== 'EADDRINUSE' && code(err) !== 'EACCES') throw err;
    }
  }
  throw new Error(`sim: no free port between ${LOW} and ${HIGH}`);
}
