// One host's SSH endpoint on 127.0.0.1. We own the listening socket and hand each connection to an
// ssh2 Server, so the endpoint can truly stop listening (a client gets ECONNREFUSED) during a reboot
// or a `refuse` fault and re-listen on the same port, and can switch host keys between connections.
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import ssh2, { type Connection, type ServerChannel, type SFTPWrapper } from 'ssh2';
import type { EndpointControl } from './host-machine.js';

const { Server, utils } = ssh2;

export interface EndpointOptions {
  name: string;
  /** OpenSSH private host key. */
  hostKey: string;
  user: string;
  /** The one public key (`ssh-ed25519 AAAA...`) allowed to log in. */
  clientPublicKey: string;
  onExec(command: string, channel: ServerChannel): void;
  onSftp(sftp: SFTPWrapper): void;
  onError(err: Error): void;
}

export class HostEndpoint implements EndpointControl {
  port = 0;
  private ssh: InstanceType<typeof Server>;
  private listener?: NetServer;
  private readonly sockets = new Set<Socket>();
  /** Why the endpoint is down (`reboot`, `refuse`); it listens only when this is empty. */
  private readonly offline = new Set<string>();
  private closed = false;
  private retry?: NodeJS.Timeout;
  private readonly allowed: ReturnType<typeof parsePublicKey>;

  constructor(private readonly options: EndpointOptions) {
    this.ssh = this.sshServer(options.hostKey);
    this.allowed = parsePublicKey(options.clientPublicKey);
  }

  /** Listens on `port` (0: any); rejects with the socket error (EADDRINUSE) so the caller can pick another. */
  listen(port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const listener = createServer((socket) => this.accept(socket));
      listener.once('error', reject);
      listener.listen({ host: '127.0.0.1', port }, () => {
        listener.off('error', reject);
        listener.on('error', (err) => this.options.onError(err));
        this.listener = listener;
        this.port = (listener.address() as { port: number }).port;
        resolve(this.port);
      });
    });
  }

  /** New connections get this key; open ones keep the key they negotiated. */
  setHostKey(privateKey: string): void {
    this.ssh = this.sshServer(privateKey);
  }

  takeOffline(reason: string): void {
    this.offline.add(reason);
    this.listener?.close();
    this.listener = undefined;
    clearTimeout(this.retry);
    for (const s of this.sockets) s.destroy();
  }

  bringOnline(reason: string): void {
    this.offline.delete(reason);
    if (this.offline.size > 0 || this.closed || this.listener) return;
    this.listen(this.port).catch((err: NodeJS.ErrnoException) => {
      // Someone took the port while we were down: keep trying, it is ours by the state file.
      this.options.onError(new Error(`${this.options.name}: re-listen on ${this.port}: ${err.message}`));
      this.retry = setTimeout(() => this.bringOnline(reason), 200);
    });
  }

  get online(): boolean {
    return this.listener !== undefined;
  }

  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const listener = this.listener;
    this.listener = undefined;
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => (listener ? listener.close(() => resolve()) : resolve()));
  }

  /** TCP connections accepted so far: how often a client paid for a handshake. */
  accepted = 0;

  /** TCP connections open now. */
  get open(): number {
    return this.sockets.size;
  }

  /** Resets every open connection and keeps listening: a NAT or firewall that forgot them, a network blip. */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
  }

  private accept(socket: Socket): void {
    if (this.offline.size > 0 || this.closed) return void socket.destroy();
    this.accepted++;
    // Without it, Nagle's algorithm and the client's delayed ACK add ~40 ms to each reply (measured: ~87 ms a command).
    socket.setNoDelay(true);
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    this.ssh.injectSocket(socket);
  }

  private sshServer(hostKey: string): InstanceType<typeof Server> {
    return new Server({ hostKeys: [hostKey] }, (client) => this.onClient(client));
  }

  private onClient(client: Connection): void {
    client.on('error', () => undefined); // resets and reboots are part of the simulation
    client.on('authentication', (ctx) => {
      if (
        ctx.method === 'publickey' &&
        ctx.username === this.options.user &&
        ctx.key.algo === this.allowed.type &&
        ctx.key.data.equals(this.allowed.blob)
      ) {
        if (!ctx.signature) return ctx.accept(); // the client asks whether this key would do
        if (ctx.blob && this.allowed.key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true) return ctx.accept();
      }
      ctx.reject(['publickey']);
    });
    client.on('ready', () => {
      client.on('session', (accept) => {
        const session = accept();
        session.on('pty', (ok) => ok?.());
        session.on('env', (ok) => ok?.());
        session.on('shell', (_ok, reject) => reject?.());
        session.on('exec', (ok, _reject, info) => this.options.onExec(info.command, ok()));
        session.on('sftp', (ok) => this.options.onSftp(ok()));
      });
    });
  }
}

function parsePublicKey(line: string): { key: ssh2.ParsedKey; type: string; blob: Buffer } {
  const parsed = utils.parseKey(line);
  if (parsed instanceof Error) throw new Error(`sim: cannot parse the client public key: ${parsed.message}`);
  const key = Array.isArray(parsed) ? (parsed[0] as ssh2.ParsedKey) : parsed;
  return { key, type: key.type, blob: key.getPublicSSH() };
}
