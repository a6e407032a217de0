// Reading docker-compose.yml, the Dockerfile and .dockerignore the way Docker does, for the parts the
// deploy tests check (no Docker engine runs here). Small on purpose: what it does not understand it
// refuses, so a construct the tests cannot read fails them instead of passing unseen.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../helpers/run-cli.js';

export { repoRoot };

export interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: (string | { type: string; source?: string; target: string; read_only?: boolean })[];
  secrets?: (string | { source: string; target?: string })[];
  ports?: (string | number | { target: number; published?: string | number; host_ip?: string })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean; interval?: string; retries?: number };
  restart?: string;
  [key: string]: unknown;
}

export interface ComposeFile {
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  secrets?: Record<string, { file?: string; environment?: string; external?: boolean }>;
}

export const readRepoFile = (path: string): string => readFileSync(join(repoRoot, path), 'utf8');

export const loadCompose = (text = readRepoFile('docker-compose.yml')): ComposeFile => parseYaml(text) as ComposeFile;

/** The KEY=VALUE lines of an env file (comments and blank lines skipped), as compose reads .env. */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(t);
    if (!m) throw new Error(`not KEY=VALUE: ${t}`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

export class MissingVariable extends Error {}

/**
 * Compose's interpolation of one string: $$ is a literal $, ${VAR}, ${VAR:-default}, ${VAR-default},
 * ${VAR:?message} and ${VAR?message}. A required variable that is unset throws MissingVariable.
 */
export function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, braced: string | undefined, op: string | undefined, arg: string | undefined, bare: string | undefined) => {
      if (whole === '$$') return '$';
      const name = (braced ?? bare)!;
      const value = env[name];
      const unset = value === undefined || (op?.startsWith(':') === true && value === '');
      if (op === undefined) return value ?? '';
      if (op.endsWith('-')) return unset ? (arg ?? '') : value!;
      if (unset) throw new MissingVariable(`${name}: ${arg}`);
      return value!;
    },
  );
}

/** Every variable a compose text refers to: name, whether it has a default, whether it is required. */
export function variablesOf(text: string): { name: string; hasDefault: boolean; required: boolean }[] {
  const out = new Map<string, { name: string; hasDefault: boolean; required: boolean }>();
  for (const m of text.replace(/\$\$/g, '').matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g)) {
    const name = (m[1] ?? m[3])!;
    out.set(name, { name, hasDefault: m[2]?.endsWith('-') === true, required: m[2]?.endsWith('?') === true });
  }
  return [...out.values()];
}

/** The service's environment as a map (list form KEY=VALUE too). */
export function environmentOf(service: ComposeService): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((line) => {
        const i = line.indexOf('=');
        return i < 0 ? [line, ''] : [line.slice(0, i), line.slice(i + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

export interface Mount {
  type: 'bind' | 'volume';
  source: string;
  target: string;
  readOnly: boolean;
}

/** Short (`src:dst[:ro]`) and long volume syntax; a source that is not a path is a named volume. */
export function mountsOf(service: ComposeService, env: Record<string, string>): Mount[] {
  return (service.volumes ?? []).map((v) => {
    if (typeof v === 'string') {
      const parts = interpolate(v, env).split(':');
      if (parts.length < 2 || parts.length > 3) throw new Error(`volume ${v}: expected SOURCE:TARGET[:MODE]`);
      const [source, target, mode = 'rw'] = parts as [string, string, string?];
      const modes = mode.split(',');
      if (modes.some((m) => !['ro', 'rw', 'z', 'Z'].includes(m))) throw new Error(`volume ${v}: unknown mode ${mode}`);
      const bind = /^[./~]/.test(source);
      return { type: bind ? 'bind' : 'volume', source, target, readOnly: modes.includes('ro') };
    }
    if (v.type !== 'bind' && v.type !== 'volume') throw new Error(`volume type ${v.type} is not read here`);
    return { type: v.type, source: interpolate(v.source ?? '', env), target: v.target, readOnly: v.read_only === true };
  });
}

export interface PublishedPort {
  hostIp: string;
  published: number;
  target: number;
}

export function portsOf(service: ComposeService): PublishedPort[] {
  return (service.ports ?? []).map((p) => {
    if (typeof p === 'object') return { hostIp: p.host_ip ?? '0.0.0.0', published: Number(p.published ?? p.target), target: p.target };
    const parts = String(p).split(':');
    if (parts.length === 3) return { hostIp: parts[0]!, published: Number(parts[1]), target: Number(parts[2]) };
    if (parts.length === 2) return { hostIp: '0.0.0.0', published: Number(parts[0]), target: Number(parts[1]) };
    return { hostIp: '0.0.0.0', published: Number(parts[0]), target: Number(parts[0]) };
  });
}

export function dependsOn(service: ComposeService): Record<string, string | undefined> {
  const d = service.depends_on ?? {};
  if (Array.isArray(d)) return Object.fromEntries(d.map((name) => [name, undefined]));
  return Object.fromEntries(Object.entries(d).map(([name, v]) => [name, v?.condition]));
}

export const asText = (v: string | string[] | undefined): string => (Array.isArray(v) ? v.join(' ') : (v ?? ''));

// ---- Dockerfile ----

export interface Instruction {
  stage: string;
  keyword: string;
  args: string;
}

/** The instructions, continuation lines joined, comments dropped; each with the stage it is in. */
export function parseDockerfile(text: string): { args: Record<string, string>; instructions: Instruction[] } {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const args: Record<string, string> = {};
  const instructions: Instruction[] = [];
  let stage = '';
  for (const line of lines) {
    const m = /^([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile line not understood: ${line}`);
    const keyword = m[1]!.toUpperCase();
    const rest = m[2]!.trim();
    if (keyword === 'ARG' && stage === '') {
      const a = /^([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/.exec(rest);
      if (a) args[a[1]!] = a[2] ?? '';
    }
    if (keyword === 'FROM') stage = /\bAS\s+(\S+)$/i.exec(rest)?.[1] ?? `#${instructions.filter((i) => i.keyword === 'FROM').length}`;
    instructions.push({ stage, keyword, args: rest });
  }
  return { args, instructions };
}

/** `COPY [--from=x] [--chown=..] src... dst` (shell or JSON form). */
export function copyParts(args: string): { from?: string; sources: string[]; dest: string } {
  let words: string[] = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
  let from: string | undefined;
  const flags = words.filter((w) => w.startsWith('--'));
  for (const f of flags) if (f.startsWith('--from=')) from = f.slice('--from='.length);
  words = words.filter((w) => !w.startsWith('--'));
  if (words.length < 2) throw new Error(`COPY needs a source and a destination: ${args}`);
  return { ...(from ? { from } : {}), sources: words.slice(0, -1), dest: words.at(-1)! };
}

/** The exec form's words, or the shell form as one `sh -c` string. */
export function execForm(args: string): string[] {
  return args.startsWith('[') ? (JSON.parse(args) as string[]) : ['/bin/sh', '-c', args];
}

// ---- .dockerignore ----

function globToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      re += '.*';
      i++;
      if (pattern[i + 1] === '/') i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Whether Docker leaves `path` (relative to the context) out of the build context: patterns are
 * anchored at the context's root, the last one that matches the path or one of its parents wins,
 * and `!` re-includes.
 */
export function dockerIgnored(path: string, ignoreText: string): boolean {
  const rules = ignoreText
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => ({ negate: l.startsWith('!'), re: globToRegExp((l.startsWith('!') ? l.slice(1) : l).replace(/^\/+|\/+$/g, '')) }));
  const parts = path.replace(/^\.\/|\/$/g, '').split('/');
  let ignored = false;
  for (let n = 1; n <= parts.length; n++) {
    const prefix = parts.slice(0, n).join('/');
    for (const rule of rules) if (rule.re.test(prefix)) ignored = !rule.negate;
  }
  return ignored;
}
