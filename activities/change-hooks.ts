import { ApplicationFailure } from '@temporalio/activity';
import type { NotificationEvent } from '../contracts/notification-event.js';
import { urlProblem, type HookConfig, type HookPoint } from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import { ErrorType } from './errors.js';
import { cancellationSignal } from './health-poll.js';
import { readSecret } from './notify-delivery.js';
import { runHook } from './provisioning.js';

/**
 * The configuration's change hooks (`hooks:`, rules/hooks-config.ts), run on the worker: a command
 * (argv, no shell; the event document in SKEWLESS_EVENT, the point in SKEWLESS_HOOK_POINT) whose exit
 * 0 says yes, or a webhook POSTed the event whose 2xx says yes. Any other answer is HookRefused with
 * the hook's own words in one line (its output's last line, or the body's start); never its URL.
 */
export interface RunChangeHookInput {
  cluster: string;
  hook: string;
  point: HookPoint;
  event: NotificationEvent;
}

const refused = (message: string) => ApplicationFailure.create({ type: ErrorType.HookRefused, message, nonRetryable: true });
const lastLine = (text: string) => text.trim().split('\n').at(-1)?.replace(/\s+/g, ' ').slice(0, 160) ?? '';

async function runCommandHook(hook: HookConfig, input: RunChangeHookInput, said: string): Promise<string> {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    SKEWLESS_EVENT: JSON.stringify(input.event),
    SKEWLESS_HOOK_POINT: input.point,
    SKEWLESS_CLUSTER: input.cluster,
  };
  const r = await runHook(hook.command as string[], env, hook.timeoutSeconds * 1000, cancellationSignal());
  const words = lastLine(r.output);
  if (r.timedOut) throw refused(`${said} did not answer in ${hook.timeoutSeconds} s`);
  if (r.code !== 0) throw refused(`${said} said no: exit ${r.code ?? r.signal}${words ? `: ${words}` : ''}`);
  return words;
}

async function runWebhookHook(hook: HookConfig, input: RunChangeHookInput, said: string): Promise<string> {
  const url = 'value' in (hook.url as object) ? (hook.url as { value: string }).value : readSecret(hook.url as never, hook.name, 'url');
  const problem = urlProblem(url, hook.allowInsecure);
  if (problem)
    throw ApplicationFailure.create({
      type: ErrorType.ClusterConfigInvalid,
      message: `hook ${hook.name}: its URL ${problem}`,
      nonRetryable: true,
    });
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': input.event.id,
        'x-skewless-hook-point': input.point,
        ...(hook.secret ? { authorization: `Bearer ${readSecret(hook.secret, hook.name, 'secret')}` } : {}),
      },
      body: JSON.stringify(input.event),
      redirect: 'manual',
      signal: AbortSignal.timeout(hook.timeoutSeconds * 1000),
    });
    text = await res.text();
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    throw refused(
      `${said} did not answer: ${e.name === 'TimeoutError' ? `no answer in ${hook.timeoutSeconds} s` : (e.cause?.code ?? e.name)}`,
    );
  }
  const words = lastLine(text);
  if (res.status < 200 || res.status >= 300) throw refused(`${said} said no: HTTP ${res.status}${words ? `: ${words}` : ''}`);
  return words;
}

export function createChangeHookActivities({ clusters }: { clusters: ClusterResolver }) {
  return {
    /** Runs one hook once; its yes is the answer's last words, its no a HookRefused naming the hook and the point. */
    async runChangeHook(input: RunChangeHookInput): Promise<{ hook: string; answer: string }> {
      const hook = clusters(input.cluster).config.hooks?.find((h) => h.name === input.hook);
      if (!hook)
        throw ApplicationFailure.create({
          type: ErrorType.ClusterConfigInvalid,
          message: `hooks: cluster ${input.cluster} has no hook ${input.hook} in its configuration`,
          nonRetryable: true,
        });
      const said = `hook ${hook.name} at ${input.point}`;
      const answer = hook.command ? await runCommandHook(hook, input, said) : await runWebhookHook(hook, input, said);
      return { hook: hook.name, answer };
    },
  };
}
