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
  const handles = new Map<number, Handle>();
  let nextHandle = 0;
  const newHandle = (h: Handle): Buffer => {
    const id = nextHandle++;
    handles.set(id, h);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(id);
    return buf;
  };
  const lookup = (buf: Buffer): Handle | undefined => (buf.length === 4 ? handles.get(buf.readUInt32BE(0)) : undefined);
  /** The path in the host root, or undefined after answering a refusal (`..` escapes). */
  const mapped = (id: number, path: string): string | undefined => {
    try {
      return machine.hostPath(path);
    } catch {
      sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'path outside the host');
      return undefined;
    }
  };

  for (const request of MUTATING) {
    sftp.on(request, (id: number) => sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'read-only'));
  }
  sftp.on('OPEN', (id, filename, flags, attrs) => {
    const path = mapped(id, filename);
    if (path === undefined) return;
    if (flags & WRITE_FLAGS) {
      if (
        !userMayWrite(machine, filename) ||
        (machine.ownerOf(filename) === 'root' && !machine.loginIsRoot && statSync(path, { throwIfNoEntry: false }))
      ) {
        return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'permission denied');
      }
      const mode = typeof attrs?.mode === 'number' ? attrs.mode & 0o777 : 0o644;
      const how = flags & OPEN_MODE.APPEND ? 'a' : flags & OPEN_MODE.EXCL ? 'wx' : 'w';
      return open(path, how, mode, (err, fd) => {
        if (err) return sftp.status(id, statusOf(err));
        machine.setOwner(filename, machine.config.user);
        sftp.handle(id, newHandle({ kind: 'file', fd, writable: true }));
      });
    }
    // The SFTP server runs as the login user: a root-owned 0600 file (a snapshot saved through sudo) is not theirs to read.
    if (!machine.mayRead(filename, machine.loginIsRoot)) return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'permission denied');
    open(path, 'r', (err, fd) => (err ? sftp.status(id, statusOf(err)) : sftp.handle(id, newHandle({ kind: 'file', fd }))));
  });
  sftp.on('READ', (id, handle, offset, length) => {
    const h = lookup(handle);
    if (h?.kind !== 'file') return sftp.status(id, STATUS_CODE.FAILURE, 'bad handle');
    const buf = Buffer.alloc(Math.min(length, 256 * 1024));
    read(h.fd, buf, 0, buf.length, offset, (err, n) => {
      if (err) sftp.status(id, statusOf(err));
      else if (n === 0) sftp.status(id, STATUS_CODE.EOF);
      else sftp.data(id, buf.subarray(0, n));
    });
  });
  sftp.on('WRITE', (id, handle, offset, data) => {
    const h = lookup(handle);
    if (h?.kind !== 'file' || !h.writable) return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'not open for writing');
    write(h.fd, data, 0, data.length, offset, (err) => sftp.status(id, err ? statusOf(err) : STATUS_CODE.OK));
  });
  sftp.on('FSETSTAT', (id, handle, attrs) => {
    const h = lookup(handle);
    if (h?.kind !== 'file' || !h.writable) return sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'read-only');
    if (typeof attrs.mode !== 'number') return sftp.status(id, STATUS_CODE.OK); // times, owners: not modelled
    fchmod(h.fd, attrs.mode & 0o777, (err) => sftp.status(id, err ? statusOf(err) : STATUS_CODE.OK));
  });
  sftp.on('FSTAT', (id, handle) => {
    const h = lookup(handle);
    if (h?.kind !== 'file') return sftp.status(id, STATUS_CODE.FAILURE, 'bad handle');
    fstat(h.fd, (err, st) => (err ? sftp.status(id, statusOf(err)) : sftp.attrs(id, attrsOf(st))));
  });
  for (const [request, fn] of [
    ['STAT', stat],
    ['LSTAT', lstat],
  ] as const) {
    sftp.on(request, (id: number, p: string) => {
      const path = mapped(id, p);
      if (path !== undefined) fn(path, (err, st) => (err ? sftp.status(id, statusOf(err)) : sftp.attrs(id, attrsOf(st))));
    });
  }
  sftp.on('CLOSE', (id, handle) => {
    const h = lookup(handle);
    if (!h) return sftp.status(id, STATUS_CODE.FAILURE, 'bad handle');
    handles.delete(handle.readUInt32BE(0));
    if (h.kind === 'dir') return sftp.status(id, STATUS_CODE.OK);
    close(h.fd, (err) => sftp.status(id, err ? statusOf(err) : STATUS_CODE.OK));
  });
  sftp.on('REALPATH', (id, p) => {
    const resolved = posix.resolve(machine.home, p === '' ? '.' : p); // pure naming: `..` cannot climb above `/`
    sftp.name(id, [{ filename: resolved, longname: resolved, attrs: {} as Attributes }]);
  });
  sftp.on('OPENDIR', (id, p) => {
    const path = mapped(id, p);
    if (path === undefined) return;
    stat(path, (err, st) => {
      if (err) return sftp.status(id, statusOf(err));
      if (!st.isDirectory()) return sftp.status(id, STATUS_CODE.FAILURE, 'not a directory');
      sftp.handle(id, newHandle({ kind: 'dir', path, sent: false }));
    });
  });
  sftp.on('READDIR', (id, handle) => {
    const h = lookup(handle);
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
  });
  // The client may vanish with files open: close what it left.
  sftp.on('close', () => {
    for (const h of handles.values()) if (h.kind === 'file') close(h.fd, () => undefined);
    handles.clear();
  });
}
