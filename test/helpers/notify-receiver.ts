import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST a receiver took: its path, headers, parsed JSON body, the status it answered and when. */
export interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  status: number;
  at: number;
}

/**
 * A real HTTP receiver on loopback, started by a test: it records every delivery and answers each
 * path with the status the test set (200 unless told), so a sink can be healthy, down (500) or
 * refusing (404). Stopped by `stop()`.
 */
export interface NotifyReceiver {
  url(path: string): string;
  deliveries: Delivery[];
  /** The status `path` answers from now on. */
  answer(path: string, status: number): void;
  stop(): Promise<void>;
}

export async function startNotifyReceiver(): Promise<NotifyReceiver> {
  const deliveries: Delivery[] = [];
  const statusOf = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const path = req.url ?? '/';
      const status = statusOf.get(path) ?? 200;
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: kept as text, the test says whether that is wrong
      }
      deliveries.push({ path, headers: req.headers, body, status, at: Date.now() });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : `status ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    deliveries,
    answer: (path, status) => statusOf.set(path, status),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
