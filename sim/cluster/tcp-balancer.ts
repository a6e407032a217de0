import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from '../../tooling/free-port.js';

/**
 * One endpoint on loopback in front of several API servers, as kubeadm's controlPlaneEndpoint is
 * in front of each control plane's kube-apiserver on a real cluster (a load balancer, TLS passed
 * through): each new connection goes to the next backend in turn, and a backend that refuses (an
 * apiserver restarting at its new version) is passed over for the next. Clients therefore meet
 * whichever version answers, as they do in the middle of a real HA upgrade.
 */
export interface TcpBalancer {
  readonly port: number;
  /** The backends' ports from now on (connections already open stay where they are). */
  setBackends(ports: readonly number[]): void;
  stop(): Promise<void>;
}

export async function startTcpBalancer(backends: readonly number[]): Promise<TcpBalancer> {
  let targets = [...backends];
  let next = 0;
  const open = new Set<Socket>();
  const track = (s: Socket): void => {
    open.add(s);
    s.once('close', () => open.delete(s));
  };

  /** Connects to the first backend, from the next in turn, that accepts; undefined when none does. */
  const dial = async (): Promise<Socket | undefined> => {
    const order = targets.map((_, i) => targets[(next + i) % targets.length] as number);
    next = targets.length ? (next + 1) % targets.length : 0;
    for (const port of order) {
      const upstream = await new Promise<Socket | undefined>((resolve) => {
        const s = connect({ host: '127.0.0.1', port });
        s.once('connect', () => resolve(s));
        s.once('error', () => resolve(undefined));
      });
      if (upstream) return upstream;
    }
    return undefined;
  };

  const server: Server = createServer((client) => {
    track(client);
    client.pause();
    client.on('error', () => client.destroy());
    void dial().then((upstream) => {
      if (!upstream || client.destroyed) {
        upstream?.destroy();
        client.destroy();
        return;
      }
      track(upstream);
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    port,
    setBackends(ports) {
      targets = [...ports];
      next = 0;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
