/**
 * The shapes of what an operator writes, once for every layer: the CLI's flags, a fleet file, a
 * policy, a maintenance window, the worker's cluster configuration. As Cluster API's `field.Path`
 * errors do, a refusal names the key it is about (`ssh.port`, `stages[1].clusters[0].to`,
 * `canaryNodes[2]`) and says what the value must be and what it was; each layer words the key its own
 * way (`--node`, `fleet file: ...`, `lab.yaml: ...`) and refuses with its own error (a UsageError,
 * a RuleError, a ClusterConfigInvalid), so the project's one-line refusal is the same everywhere.
 */

/** Where a value stands in its input: `ssh.port`, `stages[1].clusters[0]` (Cluster API's field.Path). */
export class FieldPath {
  private constructor(readonly text: string) {}
  static root(name = ''): FieldPath {
    return new FieldPath(name);
  }
  child(key: string): FieldPath {
    return new FieldPath(this.text ? `${this.text}.${key}` : key);
  }
  index(i: number): FieldPath {
    return new FieldPath(`${this.text}[${i}]`);
  }
  toString(): string {
    return this.text;
  }
}

/** One refusal: the key's path and what is wrong, worded to follow the key (`must be …, got …`). */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
    /** A key the mapping at `field` does not know, for a layer that words that refusal its own way. */
    readonly unknownKey?: { key: string; known: readonly string[] },
  ) {
    super(field ? `${field} ${detail}` : detail);
    this.name = 'FieldError';
  }
}

/** Refuses the value at `at`. */
export const refuse = (at: FieldPath, detail: string): never => {
  throw new FieldError(at.text, detail);
};

/** A value as a refusal shows it: strings quoted, anything JSON can't say as text. */
export const shown = (v: unknown): string => JSON.stringify(v) ?? String(v);

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** RFC 1123 label, at most 63: a namespace, a cluster, a fleet, a stage, a pool. */
export const isDnsLabel = (v: unknown): v is string => typeof v === 'string' && v.length <= 63 && DNS_LABEL.test(v);
/** RFC 1123 subdomain, at most 253: what a Node's (and most objects') name can be. */
export const isNodeName = (v: unknown): v is string => typeof v === 'string' && v.length <= 253 && DNS_SUBDOMAIN.test(v);
/** `namespace/name`: a DNS label and a DNS subdomain. */
export const isNamespacedName = (v: unknown): v is string => {
  if (typeof v !== 'string') return false;
  const [ns, name, ...rest] = v.split('/');
  return rest.length === 0 && isDnsLabel(ns) && isNodeName(name);
};

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Whether `key` is a valid label key (`[prefix/]name`, as `topology.kubernetes.io/zone`). */
export function isLabelKey(key: unknown): key is string {
  if (typeof key !== 'string') return false;
  const slash = key.indexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  return LABEL_NAME.test(name) && (prefix === undefined || isNodeName(prefix));
}

/** Whether `value` is a valid label value (empty allowed). */
export const isLabelValue = (value: string): boolean => value === '' || LABEL_NAME.test(value);

/** The words a refusal uses for each name's shape. */
export const NAME_SHAPES = {
  dnsLabel: "a DNS label (lowercase letters, digits, '-')",
  nodeName: "a node name (lowercase letters, digits, '-' and '.')",
  labelKey: 'a label key ([prefix/]name, as topology.kubernetes.io/zone)',
  labelValue: "a label value (letters, digits, '-', '_' and '.', at most 63)",
} as const;

/** Reads one value: returns it typed, or throws a FieldError naming `at`. */
export type Shape<T> = (value: unknown, at: FieldPath) => T;

export interface IntBounds {
  min: number;
  max?: number;
  /** Why the maximum: `the drain activity ends at 2 hours`. */
  why?: string;
}

/** A whole number within bounds: `must be an integer from 1 to 6900 (the drain activity ends at 2 hours), got 9000`. */
export const integer =
  ({ min, max, why }: IntBounds): Shape<number> =>
  (v, at) => {
    if (typeof v === 'number' && Number.isInteger(v) && v >= min && (max === undefined || v <= max)) return v;
    const range = max === undefined ? `≥ ${min}` : `from ${min} to ${max}${why ? ` (${why})` : ''}`;
    return refuse(at, `must be an integer ${range}, got ${shown(v)}`);
  };

export const boolean: Shape<boolean> = (v, at) => (typeof v === 'boolean' ? v : refuse(at, `must be true or false, got ${shown(v)}`));

export const text: Shape<string> = (v, at) => (typeof v === 'string' && v !== '' ? v : refuse(at, 'must be a non-empty string'));

export const dnsLabel: Shape<string> = (v, at) => (isDnsLabel(v) ? v : refuse(at, `must be ${NAME_SHAPES.dnsLabel}, got ${shown(v)}`));

export const labelKey: Shape<string> = (v, at) => (isLabelKey(v) ? v : refuse(at, `must be ${NAME_SHAPES.labelKey}, got ${shown(v)}`));

export const labelValue: Shape<string> = (v, at) =>
  typeof v === 'string' && v !== '' && isLabelValue(v) ? v : refuse(at, `must be ${NAME_SHAPES.labelValue}, got ${shown(v)}`);

export const nodeName: Shape<string> = (v, at) => (isNodeName(v) ? v : refuse(at, `must be ${NAME_SHAPES.nodeName}, got ${shown(v)}`));

/** One of a few words: `must be "wait" or "quarantine", got "stop"`. */
export const oneOf =
  <T extends string>(...words: readonly T[]): Shape<T> =>
  (v, at) =>
    (words as readonly unknown[]).includes(v)
      ? (v as T)
      : refuse(at, `must be ${words.map((w) => JSON.stringify(w)).join(words.length === 2 ? ' or ' : ', ')}, got ${shown(v)}`);

/** A list whose items each have `item`'s shape (an item's refusal names it: `canaryNodes[2]`). */
export const listOf =
  <T>(item: Shape<T>, what: string): Shape<T[]> =>
  (v, at) =>
    Array.isArray(v) ? v.map((x, i) => item(x, at.index(i))) : refuse(at, `must be a list of ${what}`);

/** `shape`, or absent where the key is. */
export const optional =
  <T>(shape: Shape<T>): Shape<T | undefined> =>
  (v, at) =>
    v === undefined ? undefined : shape(v, at);

/** `shape`, or `fallback` where the key is absent. */
export const withDefault =
  <T>(shape: Shape<T>, fallback: T): Shape<T> =>
  (v, at) =>
    v === undefined ? fallback : shape(v, at);

/** The first key of `value` that `known` does not list, if any. */
export const unknownKey = (value: Record<string, unknown>, known: readonly string[]): string | undefined =>
  Object.keys(value).find((k) => !known.includes(k));

/** `value` as a mapping (absent: empty) with only `known` keys: `unknown key "drian" (expected name, …)`. */
export function mappingOf(
  value: unknown,
  at: FieldPath,
  known: readonly string[],
  absent: 'empty' | 'refused' = 'empty',
): Record<string, unknown> {
  if (value === undefined && absent === 'empty') return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return refuse(at, 'must be a mapping');
  const record = value as Record<string, unknown>;
  const unknown = unknownKey(record, known);
  if (unknown !== undefined)
    throw new FieldError(at.text, `unknown key ${JSON.stringify(unknown)} (expected ${known.join(', ')})`, { key: unknown, known });
  return record;
}

export type Shapes = Record<string, Shape<unknown>>;
export type ShapeOf<S extends Shapes> = { [K in keyof S]: ReturnType<S[K]> };

/**
 * A mapping described by its keys, each with its shape: every key read (absent ones as their shape
 * says), any other refused. The declarative form of a section: `{ port: withDefault(integer(...), 22) }`.
 */
export const mapping =
  <S extends Shapes>(keys: S): Shape<ShapeOf<S>> =>
  (v, at) => {
    const record = mappingOf(v, at, Object.keys(keys));
    const read = Object.entries(keys).map(([key, shape]) => [key, shape(record[key], at.child(key))] as const);
    return Object.fromEntries(read.filter(([, value]) => value !== undefined)) as ShapeOf<S>;
  };
