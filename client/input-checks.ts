import { UsageError } from './cli-support.js';

/**
 * Shape checks of what an operator types, run before Temporal is contacted: a value that cannot be
 * right is refused here with one line (exit 2), instead of travelling to the worker first.
 */

/** DNS-1123 subdomain, what a Node name can be (the worker checks the same before any API path). */
const NODE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Gate names are the workflow's own (`workers-1.33.7`, `canary-1.33.7`). */
const GATE = /^[a-z][a-z0-9.-]{0,99}$/;

export function nodeName(value: string, flag = '--node'): string {
  if (value.length > 253 || !NODE.test(value))
    throw new UsageError(`${flag} must be a node name (lowercase letters, digits, '-' and '.'), got ${JSON.stringify(value)}`);
  return value;
}

export function gateName(value: string): string {
  if (!GATE.test(value)) throw new UsageError(`--gate must be a gate name such as workers-1.33.7, got ${JSON.stringify(value)}`);
  return value;
}

/** NAMESPACE/NAME, for --pod and --acknowledge (a PDB). */
export function namespacedName(value: string, flag: string, what: string): string {
  const [namespace, name, ...rest] = value.split('/');
  const ok =
    rest.length === 0 &&
    namespace !== undefined &&
    name !== undefined &&
    namespace.length <= 63 &&
    LABEL.test(namespace) &&
    name.length <= 253 &&
    NODE.test(name);
  if (!ok) throw new UsageError(`${flag} takes NAMESPACE/${what}, got ${JSON.stringify(value)}`);
  return value;
}

/** A count ≥ 1 or a percentage from 1% to 100%: 0 would never let a worker start. */
export function maxUnavailable(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^([1-9]\d{0,5}|[1-9]\d?%|100%)$/.test(value)) {
    throw new UsageError(`--max-unavailable must be a count ≥ 1 or a percentage from 1% to 100%, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Exactly one positional argument (the cluster), for the commands that take NAME. */
export function onlyPositional(positionals: string[]): string | undefined {
  if (positionals.length > 1)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}: the command takes one cluster NAME`);
  return positionals[0];
}
