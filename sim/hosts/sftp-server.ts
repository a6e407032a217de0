// The SFTP subsystem over the host root, as the login user: the product copies an etcd snapshot off
// a node, and onto one (a restore's other control planes). Reads and listings work (a file only root
// may read is PERMISSION_DENIED); a file may be written only where the login user may write (/tmp,
// its home), and becomes that user's; every other request that would change the host is
// PERMISSION_DENIED, and requests with no handler are answered OP_UNSUPPORTED by ssh2 itself.
import { close, fchmod, fstat, lstat, open, read, readdir, stat, statSync, write, type Stats } from 'node:fs';
import { posix } from 'node:path';
import ssh2, { type Attributes, type FileEntry, type SFTPWrapper } from 'ssh2';
import type { HostMachine } from './host-machine.js';

const { OPEN_MODE, STATUS_CODE } = ssh2.utils.sftp;
const MUTATING = ['SETSTAT', 'REMOVE', 'MKDIR', 'RMDIR', 'RENAME', 'SYMLINK'] as const;
const WRITE_FLAGS = OPEN_MODE.WRITE | OPEN_MODE.APPEND | OPEN_MODE.CREAT | OPEN_MODE.TRUNC | OPEN_MODE.EXCL;

type Handle = { kind: 'file'; fd: number; writable?: boolean } | { kind: 'dir'; path: string; sent: boolean };

/** Where the login user may create a file: /tmp and its home (as coreutils' writable()). */
function userMayWrite(machine: HostMachine, path: string): boolean {
  const abs = posix.normalize(path.startsWith('/') ? path : posix.join(machine.home, path));
  return machine.loginIsRoot || abs.startsWith('/tmp/') || abs.startsWith(`${machine.home}/`);
}

function statusOf(err: NodeJS.ErrnoException): number {
  if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return STATUS_CODE.NO_SUCH_FILE;
  if (err.code === 'EACCES' || err.code === 'EPERM') return STATUS_CODE.PERMISSION_DENIED;
  return STATUS_CODE.FAILURE;
}

function attrsOf(st: Stats): Attributes {
  return { mode: st.mode, uid: 0, gid: 0, size: st.size, atime: Math.floor(st.atimeMs / 1000), mtime: Math.floor(st.mtimeMs / 1000) };
}

function longname(name: string, st: Stats): string {
  const type = st.isDirectory() ? 'd' : '-';
  const perms = [6, 3, 0]
    .map((s) => (st.mode >> s) & 7)
    .map((b) => `${b & 4 ? 'r' : '-'}${b & 2 ? 'w' : '-'}${b & 1 ? 'x' : '-'}`)
    .join('');
  return `${type}${perms} 1 root root ${st.size} ${st.mtime.toISOString().slice(0, 10)} ${name}`;
}

export function serveSftp(sftp: SFTPWrapper, machine: HostMachine): void {
  const session = new SftpSession(sftp, machine);
  for (const request of MUTATING) {
    sftp.on(request, (id: number) => sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'read-only'));
  }
  sftp.on('OPEN', (id, filename, flags, attrs) => session.open(id, filename, flags, attrs));
  sftp.on('READ', (id, handle, offset, length) => session.read(id, handle, offset, length));
  sftp.on('WRITE', (id, handle, offset, data) => session.write(id, handle, offset, data));
  sftp.on('FSETSTAT', (id, handle, attrs) => session.fsetstat(id, handle, attrs));
  sftp.on('FSTAT', (id, handle) => session.fstat(id, handle));
  sftp.on('STAT', (id, p) => session.stat(id, p, stat));
  sftp.on('LSTAT', (id, p) => session.stat(id, p, lstat));
  sftp.on('CLOSE', (id, handle) => session.close(id, handle));
  sftp.on('REALPATH', (id, p) => session.realpath(id, p));
  sftp.on('OPENDIR', (id, p) => session.opendir(id, p));
  sftp.on('READDIR', (id, handle) => session.readdir(id, handle));
  // The client may vanish with files open: close what it left.
  sftp.on('close', () => session.closeAll());
}

/** One SFTP session's open handles, and its answer to each request. */
class SftpSession {
  private readonly handles = new Map<number, Handle>();
  private nextHandle = 0;

  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly machine: HostMachine,
  ) {}

  private newHandle(h: Handle): Buffer {
    const id = this.nextHandle++;
    this.handles.set(id, h);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(id);
    return buf;
  }

  private lookup(buf: Buffer): Handle | undefined {
    return buf.length === 4 ? this.handles.get(buf.readUInt32BE(0)) : undefined;
  }

  /** The path in the host root, or undefined after answering a refusal (`..` escapes). */
  private mapped(id: number, path: string): string | undefined {
    try {
      return this.machine.hostPath(path);
    } catch {
      this.sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'path outside the host');
      return undefined;
    }
  }

  open(id: number, filename: string, flags: number, attrs: Attributes | undefined): void {
    const { sftp, machine } = this;
    const path = this.mapped(id, filename);
    if (path === undefined) return;
    if (flags & WRITE_FLAGS) return this.openForWriting(id, filename, path, flags, attrs);
    // The SFTP server runs as the login user: a root-owned 0600 file (a snapshot saved through sudo) is not theirs to read.
    if (!machine.mayRead(filename, machine.loginIsRoot)) return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'permission denied');
    open(path, 'r', (err, fd) => (err ? sftp.status(id, statusOf(err)) : sftp.handle(id, this.newHandle({ kind: 'file', fd }))));
  }

  /** Only where the login user may write, never over a root-owned file; the file becomes the user's. */
  private openForWriting(id: number, filename: string, path: string, flags: number, attrs: Attributes | undefined): void {
    const { sftp, machine } = this;
    if (
      !userMayWrite(machine, filename) ||
      (machine.ownerOf(filename) === 'root' && !machine.loginIsRoot && statSync(path, { throwIfNoEntry: false }))
    ) {
      return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'permission denied');
    }
    const mode = typeof attrs?.mode === 'number' ? attrs.mode & 0o777 : 0o644;
    const how = flags & OPEN_MODE.APPEND ? 'a' : flags & OPEN_MODE.EXCL ? 'wx' : 'w';
    open(path, how, mode, (err, fd) => {
      if (err) return sftp.status(id, statusOf(err));
      machine.setOwner(filename, machine.config.user);
      sftp.handle(id, this.newHandle({ kind: 'file', fd, writable: true }));
    });
  }

  read(id: number, handle: Buffer, offset: number, length: number): void {
    const { sftp } = this;
    const h = this.lookup(handle);
    if (h?.kind !== 'file') return sftp.status(id, STATUS_CODE.FAILURE, 'bad handle');
    const buf = Buffer.alloc(Math.min(length, 256 * 1024));
    read(h.fd, buf, 0, buf.length, offset, (err, n) => {
      if (err) sftp.status(id, statusOf(err));
      else if (n === 0) sftp.status(id, STATUS_CODE.EOF);
      else sftp.data(id, buf.subarray(0, n));
    });
  }

  write(id: number, handle: Buffer, offset: number, data: Buffer): void {
    const { sftp } = this;
    const h = this.lookup(handle);
    if (h?.kind !== 'file' || !h.writable) return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'not open for writing');
    write(h.fd, data, 0, data.length, offset, (err) => sftp.status(id, err ? statusOf(err) : STATUS_CODE.OK));
  }

  fsetstat(id: number, handle: Buffer, attrs: Attributes): void {
    const { sftp } = this;
    const h = this.lookup(handle);
    if (h?.kind !== 'file' || !h.writable) return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'read-only');
    if (typeof attrs.mode !== 'number') return sftp.status(id, STATUS_CODE.OK); // times, owners: not modelled
    fchmod(h.fd, attrs.mode & 0o777, (err) => sftp.status(id, err ? statusOf(err) : STATUS_CODE.OK));
  }

  fstat(id: number, handle: Buffer): void {
    const { sftp } = this;
    const h = this.lookup(handle);
    if (h?.kind !== 'file') return sftp.status(id, STATUS_CODE.FAILURE, 'bad handle');
    fstat(h.fd, (err, st) => (err ? sftp.status(id, statusOf(err)) : sftp.attrs(id, attrsOf(st))));
  }

  /** STAT (`fn` stat) and LSTAT (lstat). */
  stat(id: number, p: string, fn: typeof stat | typeof lstat): void {
    const path = this.mapped(id, p);
    if (path !== undefined) fn(path, (err, st) => (err ? this.sftp.status(id, statusOf(err)) : this.sftp.attrs(id, attrsOf(st))));
  }

  close(id: number, handle: Buffer): void {
    const { sftp } = this;
    const h = this.lookup(handle);
    if (!h) return sftp.status(id, STATUS_CODE.FAILURE, 'bad handle');
    this.handles.delete(handle.readUInt32BE(0));
    if (h.kind === 'dir') return sftp.status(id, STATUS_CODE.OK);
    close(h.fd, (err) => sftp.status(id, err ? statusOf(err) : STATUS_CODE.OK));
  }

  realpath(id: number, p: string): void {
    const resolved = posix.resolve(this.machine.home, p === '' ? '.' : p); // pure naming: `..` cannot climb above `/`
    this.sftp.name(id, [{ filename: resolved, longname: resolved, attrs: {} as Attributes }]);
  }

  opendir(id: number, p: string): void {
    const { sftp } = this;
    const path = this.mapped(id, p);
    if (path === undefined) return;
    stat(path, (err, st) => {
      if (err) return sftp.status(id, statusOf(err));
      if (!st.isDirectory()) return sftp.status(id, STATUS_CODE.FAILURE, 'not a directory');
      sftp.handle(id, this.newHandle({ kind: 'dir', path, sent: false }));
    });
  }

  /** The whole directory in one answer, sorted by name; EOF after it. */
  readdir(id: number, handle: Buffer): void {
    const { sftp } = this;
    const h = this.lookup(handle);
    if (h?.kind !== 'dir') return sftp.status(id, STATUS_CODE.FAILURE, 'bad handle');
    if (h.sent) return sftp.status(id, STATUS_CODE.EOF);
    h.sent = true;
    readdir(h.path, (err, names) => {
      if (err) return sftp.status(id, statusOf(err));
      const entries: FileEntry[] = [];
      let pending = names.length;
      if (pending === 0) return sftp.status(id, STATUS_CODE.EOF);
      for (const name of names) {
        lstat(posix.join(h.path, name), (e, st) => {
          if (!e) entries.push({ filename: name, longname: longname(name, st), attrs: attrsOf(st) });
          if (--pending === 0)
            sftp.name(
              id,
              entries.sort((a, b) => a.filename.localeCompare(b.filename)),
            );
        });
      }
    });
  }

  closeAll(): void {
    for (const h of this.handles.values()) if (h.kind === 'file') close(h.fd, () => undefined);
    this.handles.clear();
  }
}
