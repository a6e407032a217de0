import { isMaxUnavailable, isNamespacedName, isNodeName, MAX_UNAVAILABLE_SHAPE, NAME_SHAPES } from '../rules/index.js';
import { UsageError } from './cli-support.js';

/**
 * Shape checks of what an operator types, run before Temporal is contacted: a value that cannot be
 * right is refused here with one line naming the flag (exit 2), instead of travelling to the worker
 * first. The shapes are rules/input-shapes.ts's, the same the worker and the workflows check.
 */

/** Gate names are the workflow's own (`workers-1.33.7`, `canary-1.33.7`). */
const GATE = /^[a-z][a-z0-9.-]{0,99}$/;

export function nodeName(value: string, flag = '--node'): string {
  if (!isNodeName(value)) throw new UsageError(`${flag} must be ${NAME_SHAPES.nodeName}, got ${JSON.stringify(value)}`);
  return value;
}

export function gateName(value: string): string {
  if (!GATE.test(value)) throw new UsageError(`--gate must be a gate name such as workers-1.33.7, got ${JSON.stringify(value)}`);
  return value;
}

/** NAMESPACE/NAME, for --pod and --acknowledge (a PDB). */
export function namespacedName(value: string, flag: string, what: string): string {
  if (!isNamespacedName(value)) throw new UsageError(`${flag} takes NAMESPACE/${what}, got ${JSON.stringify(value)}`);
  return value;
}

/** A count ≥ 1 or a percentage from 1% to 100%: 0 would never let a worker start. */
export function maxUnavailable(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isMaxUnavailable(value)) throw new UsageError(`--max-unavailable must be ${MAX_UNAVAILABLE_SHAPE}, got ${JSON.stringify(value)}`);
  return value;
}

/** Exactly one positional argument (the cluster), for the commands that take NAME. */
export function onlyPositional(positionals: string[]): string | undefined {
  if (positionals.length > 1)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}: the command takes one cluster NAME`);
  return positionals[0];
}
