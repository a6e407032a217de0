import { DEFAULT_TASK_QUEUE, POLICY_FLAG } from '../contracts/cli-flags.js';

/** What a run was started with, as the command that repeats it needs it. */
export interface UpgradeCommandInput {
  cluster: string;
  to: string;
  /** The run's policy as it was given (only the keys the operator set). */
  policy?: object;
  /** The run's task queue: named when it is not the default, or no worker would serve the command's run. */
  taskQueue: string;
}

/** A word the shell keeps as it is; anything else in single quotes. */
const shellWord = (value: string) => (/^[\w.:/%@=,+-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`);

/**
 * `skewless upgrade --cluster C --to V [--task-queue Q] [policy flags]`: the upgrade again with the
 * run's own queue and policy (gates, batch size, drain timeout, acknowledgements), as a finish command.
 * A key without a flag (set by a fleet file) is left to its default; who acknowledges is whoever runs it.
 */
export function upgradeCommand(run: UpgradeCommandInput): string {
  const words = ['skewless', 'upgrade', '--cluster', run.cluster, '--to', run.to];
  if (run.taskQueue !== DEFAULT_TASK_QUEUE) words.push('--task-queue', run.taskQueue);
  for (const [key, value] of Object.entries(run.policy ?? {})) {
    const flag = (POLICY_FLAG as Record<string, string>)[key];
    if (flag === undefined || value === undefined || value === false) continue;
    if (value === true) words.push(flag);
    // --batch-order takes its values as one comma-separated word; --acknowledge is repeated.
    else if (Array.isArray(value) && key === 'batchOrder') words.push(flag, value.join(','));
    else if (Array.isArray(value)) for (const v of value) words.push(flag, String(v));
    else words.push(flag, String(value));
  }
  return words.map(shellWord).join(' ');
}
