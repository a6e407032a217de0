// SSH identities of the simulation: one persistent ed25519 host key per host (so a strict client's
// known_hosts stays valid across simulator restarts), and the one operator key the hosts accept.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ssh2 from 'ssh2';
import { writeFileAtomic } from './host-state.js';

const { utils } = ssh2;

export interface KeyPair {
  /** OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`). */
  privateKey: string;
  /** One authorized_keys-style line: `ssh-ed25519 AAAA... comment`. */
  publicKey: string;
}

export interface ClientKey extends KeyPair {
  privateKeyPath: string;
  publicKeyPath: string;
}

/**
 * ssh2 (1.17) drops leading zero bytes of an ed25519 public key when it encodes a generated pair,
 * so about 1 key in 250 is malformed (its own parser and OpenSSH reject it): generate until both
 * halves parse and the public key is the full 32 bytes.
 */
function generate(comment: string): KeyPair {
  for (let attempt = 0; attempt < 50; attempt++) {
    const pair = utils.generateKeyPairSync('ed25519', { comment });
    const priv = utils.parseKey(pair.private);
    const pub = utils.parseKey(pair.public);
    if (priv instanceof Error || pub instanceof Error) continue;
    const blob = pub.getPublicSSH(); // string "ssh-ed25519" (4+11) + string key (4+32)
    if (blob.length === 51 && priv.getPublicSSH().equals(blob)) return { privateKey: pair.private, publicKey: pair.public.trim() };
  }
  throw new Error('sim: could not generate a well-formed ed25519 key');
}

function writePair(privatePath: string, pair: KeyPair): void {
  mkdirSync(dirname(privatePath), { recursive: true });
  writeFileAtomic(privatePath, pair.privateKey, 0o600);
  writeFileAtomic(`${privatePath}.pub`, `${pair.publicKey}\n`);
}

function readPair(privatePath: string): KeyPair | undefined {
  if (!existsSync(privatePath) || !existsSync(`${privatePath}.pub`)) return undefined;
  return { privateKey: readFileSync(privatePath, 'utf8'), publicKey: readFileSync(`${privatePath}.pub`, 'utf8').trim() };
}

const hostKeyPath = (hostDir: string): string => join(hostDir, 'ssh_host_ed25519_key');

/** The host's key, generated on first use and reused on every later start. */
export function ensureHostKey(hostDir: string, hostName: string): KeyPair {
  const existing = readPair(hostKeyPath(hostDir));
  if (existing) return existing;
  const pair = generate(`root@${hostName}`);
  writePair(hostKeyPath(hostDir), pair);
  return pair;
}

/** Replaces the host's key for good (a reinstalled host); known_hosts is deliberately left alone. */
export function rotateHostKey(hostDir: string, hostName: string): KeyPair {
  const pair = generate(`root@${hostName}`);
  writePair(hostKeyPath(hostDir), pair);
  return pair;
}

/** The key blob of a public key line (`ssh-ed25519 AAAA...`). */
export function publicKeyBlob(publicKey: string): Buffer {
  const base64 = publicKey.trim().split(/\s+/)[1];
  if (!base64) throw new Error(`sim: not a public key line: ${publicKey}`);
  return Buffer.from(base64, 'base64');
}

/** `ssh-ed25519 AAAA...` without the comment, as known_hosts holds it. */
export const keyWithoutComment = (publicKey: string): string => publicKey.trim().split(/\s+/).slice(0, 2).join(' ');

/** OpenSSH's `SHA256:...` fingerprint, as `ssh-keygen -lf` prints it. */
export function fingerprint(publicKey: string): string {
  return `SHA256:${createHash('sha256').update(publicKeyBlob(publicKey)).digest('base64').replace(/=+$/, '')}`;
}

/** The operator's key pair at `<stateDir>/ssh/id_ed25519`; the only key any host accepts. */
export function ensureClientKey(stateDir: string, user: string): ClientKey {
  const privateKeyPath = join(stateDir, 'ssh', 'id_ed25519');
  const pair = readPair(privateKeyPath) ?? generate(`${user}@skewless-sim`);
  if (!existsSync(privateKeyPath)) writePair(privateKeyPath, pair);
  return { ...pair, privateKeyPath, publicKeyPath: `${privateKeyPath}.pub` };
}

export const knownHostsName = (port: number): string => `[127.0.0.1]:${port}`;

/** `[127.0.0.1]:PORT` → `ssh-ed25519 AAAA...` for every line of an OpenSSH known_hosts file. */
export function readKnownHosts(path: string): Map<string, string> {
  const entries = new Map<string, string>();
  if (!existsSync(path)) return entries;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const [names, type, key] = line.trim().split(/\s+/);
    if (!names || !type || !key || names.startsWith('#')) continue;
    for (const name of names.split(',')) entries.set(name, `${type} ${key}`);
  }
  return entries;
}

/** Rewrites known_hosts from `entries` (name → `type key`), sorted so the file is stable. */
export function writeKnownHosts(path: string, entries: Map<string, string>): void {
  const lines = [...entries].sort(([a], [b]) => a.localeCompare(b)).map(([name, key]) => `${name} ${key}`);
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomic(path, lines.length ? `${lines.join('\n')}\n` : '');
}
