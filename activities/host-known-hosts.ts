// Strict host-key checking against an OpenSSH known_hosts file: plain names, `[host]:port`,
// comma lists, `*`/`?` patterns with `!` negation, hashed names (`|1|salt|hash`) and `@revoked`
// lines. There is no trust on first use: a host the file does not list is refused like a changed key.
import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface KnownKey {
  /** `ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`... */
  type: string;
  /** The public key blob, base64 as the file holds it. */
  blob: string;
}

export interface HostKeyPolicy {
  /** Keys that may answer for this host. */
  accepted: KnownKey[];
  /** Keys marked @revoked for this host (refused even if also listed as accepted). */
  revoked: Set<string>;
}

/** The name OpenSSH looks up: `host` on port 22, `[host]:port` otherwise. */
export const knownHostsName = (host: string, port: number): string => (port === 22 ? host : `[${host}]:${port}`);

/** OpenSSH's `SHA256:...` fingerprint of a key blob. */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );
  return re.test(name);
}

function hashedMatch(entry: string, name: string): boolean {
  const [, magic, salt, hash] = entry.split('|');
  if (magic !== '1' || !salt || !hash) return false;
  return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
}

/** Whether a comma list of host patterns names `name` (a matching `!pattern` vetoes the line). */
export function hostsFieldMatches(field: string, name: string): boolean {
  let matched = false;
  for (const pattern of field.split(',')) {
    if (pattern.startsWith('|')) matched ||= hashedMatch(pattern, name);
    else if (pattern.startsWith('!')) {
      if (globMatch(pattern.slice(1), name)) return false;
    } else matched ||= globMatch(pattern, name);
  }
  return matched;
}

/** The keys `known_hosts` text holds for `name`. */
export function hostKeyPolicy(text: string, name: string): HostKeyPolicy {
  const policy: HostKeyPolicy = { accepted: [], revoked: new Set() };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    const marker = fields[0]?.startsWith('@') ? fields.shift() : undefined;
    const [hosts, type, blob] = fields;
    if (!hosts || !type || !blob || !hostsFieldMatches(hosts, name)) continue;
    if (marker === '@revoked') policy.revoked.add(blob);
    else if (marker === undefined) policy.accepted.push({ type, blob });
    // @cert-authority lines vouch for host certificates, which this client does not use.
  }
  return policy;
}

export function readHostKeyPolicy(path: string, name: string): HostKeyPolicy {
  return hostKeyPolicy(readFileSync(path, 'utf8'), name);
}

/** The host-key algorithms to offer so the server presents a key type the file knows. */
export function hostKeyAlgorithms(policy: HostKeyPolicy): string[] {
  const out = new Set<string>();
  for (const { type } of policy.accepted) {
    if (type === 'ssh-rsa') ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'].forEach((a) => out.add(a));
    else out.add(type);
  }
  return [...out];
}

/** Whether the blob the server presented is one the file accepts for this host. */
export function keyAccepted(policy: HostKeyPolicy, presented: Buffer): boolean {
  const b64 = presented.toString('base64');
  if (policy.revoked.has(b64)) return false;
  return policy.accepted.some((k) => Buffer.from(k.blob, 'base64').equals(presented));
}
