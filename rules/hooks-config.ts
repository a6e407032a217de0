import { SETTING_LIMITS } from '../contracts/time-limits.js';
import { RuleError } from './rule-error.js';
import { urlProblem, type SecretSource } from './notify-config.js';

/**
 * The cluster configuration's `hooks:` (change management around each step, issue 39): a webhook or
 * a command on the worker's machine, run at the points named in `at`, each with a timeout and what a
 * "no" means (`fail`: a beforeRun hook refuses the start, any other halts the run for the operator;
 * `ignore`: recorded, and the run goes on). Judged key by key, one line naming the key (RuleError
 * InvalidPolicy), as `notify:` is. Pure: URLs and secrets in files or variables are read at the call.
 */
export const HOOK_POINTS = ['beforeRun', 'beforeHop', 'afterControlPlane', 'beforeNode', 'afterNode', 'afterRun'] as const;
export type HookPoint = (typeof HOOK_POINTS)[number];
export const HOOK_FAILURE_POLICIES = ['fail', 'ignore'] as const;

export interface HookConfig {
  name: string;
  at: HookPoint[];
  /** argv run without a shell, the event document in SKEWLESS_EVENT; or a webhook POSTed the event. */
  command?: string[];
  url?: { value: string } | SecretSource;
  secret?: SecretSource;
  allowInsecure: boolean;
  timeoutSeconds: number;
  onFailure: (typeof HOOK_FAILURE_POLICIES)[number];
}

/** What a workflow knows of a hook: never its command or URL. */
export type HookSubscription = Pick<HookConfig, 'name' | 'at' | 'onFailure'>;

export const HOOK_KEYS = [
  'name',
  'at',
  'command',
  'url',
  'urlFile',
  'urlEnv',
  'secretFile',
  'secretEnv',
  'allowInsecure',
  'timeoutSeconds',
  'onFailure',
] as const;
export const HOOK_TIMEOUT = { default: 60, max: SETTING_LIMITS['hooks.timeoutSeconds'].max } as const;
const HOOK_NAME = /^[A-Za-z0-9._-]{1,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const bad = (key: string, message: string) => new RuleError('InvalidPolicy', `${key} ${message}`);

function source(r: Record<string, unknown>, key: string, file: string, env: string): SecretSource | undefined {
  if (r[file] !== undefined && r[env] !== undefined) throw bad(`${key}.${file}`, `and ${key}.${env} are both given: one of them`);
  const f = r[file];
  if (f !== undefined) {
    if (typeof f !== 'string' || !f.startsWith('/')) throw bad(`${key}.${file}`, 'must be an absolute path');
    return { file: f };
  }
  const e = r[env];
  if (e !== undefined) {
    if (typeof e !== 'string' || !ENV_NAME.test(e)) throw bad(`${key}.${env}`, 'must be an environment variable name');
    return { env: e };
  }
  return undefined;
}

function commandWords(value: unknown, key: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((w) => typeof w === 'string' && w !== ''))
    throw bad(
      key,
      `must be a list of words, run without a shell (e.g. [/usr/local/bin/change-ticket, open]), got ${JSON.stringify(value).slice(0, 60)}`,
    );
  if (!(value[0] as string).startsWith('/')) throw bad(`${key}[0]`, 'must be an absolute path (no PATH lookup on the worker)');
  return value as string[];
}

function parseHook(value: unknown, i: number, names: Set<string>): HookConfig {
  const key = `hooks[${i}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad(key, 'must be a mapping');
  const r = value as Record<string, unknown>;
  const unknown = Object.keys(r).find((k) => !(HOOK_KEYS as readonly string[]).includes(k));
  if (unknown !== undefined) throw bad(`${key}.${unknown}`, `is not a known key (${HOOK_KEYS.join(', ')})`);
  if (typeof r.name !== 'string' || !HOOK_NAME.test(r.name)) throw bad(`${key}.name`, "must be letters, digits, '.', '_' or '-'");
  if (names.has(r.name)) throw bad(`${key}.name`, `${r.name} is given twice`);
  names.add(r.name);
  if (!Array.isArray(r.at) || r.at.length === 0) throw bad(`${key}.at`, `must be a list of points (${HOOK_POINTS.join(', ')})`);
  const at = r.at.map((p: unknown, k) => {
    if (!(HOOK_POINTS as readonly unknown[]).includes(p))
      throw bad(`${key}.at[${k}]:`, `unknown point ${JSON.stringify(p)} (${HOOK_POINTS.join(', ')})`);
    return p as HookPoint;
  });
  if (r.allowInsecure !== undefined && typeof r.allowInsecure !== 'boolean') throw bad(`${key}.allowInsecure`, 'must be true or false');
  const allowInsecure = r.allowInsecure === true;
  const from = source(r, key, 'urlFile', 'urlEnv');
  const hasUrl = from !== undefined || r.url !== undefined;
  if (hasUrl === (r.command !== undefined)) throw bad(key, 'must have exactly one of command or url (urlFile, urlEnv)');
  if (from && r.url !== undefined) throw bad(`${key}.url`, 'is given with urlFile or urlEnv: one of them');
  if (r.url !== undefined) {
    if (typeof r.url !== 'string') throw bad(`${key}.url`, 'must be a URL');
    const problem = urlProblem(r.url, allowInsecure);
    if (problem) throw bad(`${key}.url`, problem);
  }
  const command = r.command === undefined ? undefined : commandWords(r.command, `${key}.command`);
  const secret = source(r, key, 'secretFile', 'secretEnv');
  const t = r.timeoutSeconds ?? HOOK_TIMEOUT.default;
  if (typeof t !== 'number' || !Number.isInteger(t) || t < 1 || t > HOOK_TIMEOUT.max)
    throw bad(`${key}.timeoutSeconds`, `must be an integer from 1 to ${HOOK_TIMEOUT.max}`);
  const onFailure = r.onFailure ?? 'fail';
  if (!(HOOK_FAILURE_POLICIES as readonly unknown[]).includes(onFailure))
    throw bad(`${key}.onFailure`, `must be fail or ignore, got ${JSON.stringify(onFailure)}`);
  return {
    name: r.name,
    at,
    ...(command ? { command } : {}),
    ...(hasUrl ? { url: from ?? { value: r.url as string } } : {}),
    ...(secret ? { secret } : {}),
    allowInsecure,
    timeoutSeconds: t,
    onFailure: onFailure as HookConfig['onFailure'],
  };
}

/** `hooks:` as written (absent: none). */
export function parseHooks(value: unknown): HookConfig[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw bad('hooks', 'must be a list of hooks');
  const names = new Set<string>();
  return value.map((v, i) => parseHook(v, i, names));
}

/** The hooks to run at `point`, in the order written. */
export const hooksAt = (hooks: readonly HookSubscription[], point: HookPoint): HookSubscription[] =>
  hooks.filter((h) => h.at.includes(point));
