import { readFileSync } from 'node:fs';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { NotificationEvent } from '../contracts/notification-event.js';
import { NOTIFICATION_EVENT_SCHEMA } from '../contracts/notification-event.js';
import { sinkSubscriptions, urlProblem, type NotifySink, type SecretSource, type SinkSubscription } from '../rules/index.js';
import type { ClusterResolver } from './cluster-access.js';
import { ErrorType } from './errors.js';

/**
 * Delivery of one event to one `notify:` sink (docs/notifications.md): the generic webhook (the event
 * as JSON), a Slack-compatible incoming webhook (text + blocks) or CloudEvents over HTTP in structured
 * mode. The URL and secret are read here, on the worker, from the configuration or the file or
 * environment variable it names; no failure message or result ever shows them (a sink is named by
 * its `name`). Each attempt is one POST; the workflow's notification profile retries.
 */
export interface DeliverNotificationInput {
  cluster: string;
  sink: string;
  event: NotificationEvent;
}

export interface DeliveryAnswer {
  sink: string;
  /** The HTTP status the sink answered. */
  status: number;
  /** The start of its body, one line (at most 200 characters). */
  answer: string;
  attempt: number;
}

const failure = (type: string, message: string, nonRetryable: boolean) => ApplicationFailure.create({ type, message, nonRetryable });

/** A secret's value from its file (first line) or environment variable; `key` names it in a refusal, never its value. */
export function readSecret(source: SecretSource, sink: string, key: string): string {
  if ('env' in source) {
    const v = process.env[source.env];
    if (!v) throw failure(ErrorType.ClusterConfigInvalid, `notify ${sink}: ${key}Env ${source.env} is not set on the worker`, true);
    return v.trim();
  }
  try {
    const v = readFileSync(source.file, 'utf8').split('\n')[0]?.trim() ?? '';
    if (v) return v;
  } catch (err) {
    throw failure(
      ErrorType.ClusterConfigInvalid,
      `notify ${sink}: ${key}File ${source.file} is not readable: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
      true,
    );
  }
  throw failure(ErrorType.ClusterConfigInvalid, `notify ${sink}: ${key}File ${source.file} is empty`, true);
}

/** The sink's URL, checked as the configuration's `url` is (a URL from a file or variable is only known here). */
export function sinkUrl(sink: NotifySink): string {
  if ('value' in sink.url) return sink.url.value;
  const url = readSecret(sink.url, sink.name, 'url');
  const problem = urlProblem(url, sink.allowInsecure);
  if (problem)
    throw failure(
      ErrorType.ClusterConfigInvalid,
      `notify ${sink.name}: the URL of url${'env' in sink.url ? 'Env' : 'File'} ${problem}`,
      true,
    );
  return url;
}

/** The body and content type a sink of this type takes. */
export function sinkBody(type: NotifySink['type'], event: NotificationEvent): { contentType: string; body: unknown } {
  if (type === 'cloudevents')
    return {
      contentType: 'application/cloudevents+json',
      body: {
        specversion: '1.0',
        id: event.id,
        source: `/skewless/${event.workflowId}`,
        type: `io.skewless.${event.kind}`,
        subject: event.cluster,
        time: event.at,
        datacontenttype: 'application/json',
        dataschema: NOTIFICATION_EVENT_SCHEMA.$id,
        data: event,
      },
    };
  if (type === 'slack') {
    const blocks: unknown[] = [{ type: 'section', text: { type: 'mrkdwn', text: `*${event.kind}* ${event.cluster}: ${event.summary}` } }];
    if (event.command) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `\`${event.command}\`` } });
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `${event.workflowId} · ${event.at} · ${event.id}` }] });
    return { contentType: 'application/json', body: { text: `[${event.cluster}] ${event.summary}`, blocks } };
  }
  return { contentType: 'application/json', body: event };
}

function attemptNow(): number {
  try {
    return Context.current().info.attempt;
  } catch {
    return 1; // a plain call in a test
  }
}

/** One POST of the event to the sink; 2xx is delivered, 408/429/5xx and no answer are retried, any other 4xx is final. */
export async function postToSink(sink: NotifySink, event: NotificationEvent): Promise<Omit<DeliveryAnswer, 'attempt'>> {
  const url = sinkUrl(sink);
  const { contentType, body } = sinkBody(sink.type, event);
  const headers: Record<string, string> = {
    'content-type': contentType,
    'idempotency-key': event.id,
    'x-skewless-event': event.kind,
    ...(sink.secret ? { authorization: `Bearer ${readSecret(sink.secret, sink.name, 'secret')}` } : {}),
  };
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(sink.timeoutSeconds * 1000),
    });
    text = await res.text();
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why = e.name === 'TimeoutError' ? `no answer in ${sink.timeoutSeconds} s` : (e.cause?.code ?? e.name);
    throw failure(ErrorType.NotificationUndelivered, `notify ${sink.name}: ${event.kind} not delivered: ${why}`, false);
  }
  const answer = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  if (res.status >= 200 && res.status < 300) return { sink: sink.name, status: res.status, answer };
  const retry = res.status === 408 || res.status === 429 || res.status >= 500;
  throw failure(
    retry ? ErrorType.NotificationUndelivered : ErrorType.NotificationRefused,
    `notify ${sink.name}: ${event.kind} answered HTTP ${res.status}${answer ? `: ${answer.slice(0, 80)}` : ''}`,
    !retry,
  );
}

export function createNotifyActivities({ clusters }: { clusters: ClusterResolver }) {
  return {
    /** The cluster's sinks by name and events (never a URL): what `skewless notify test` sends to. */
    async notifySinks(input: { cluster: string }): Promise<SinkSubscription[]> {
      return sinkSubscriptions(clusters(input.cluster).config.notify ?? []);
    },
    /** One event to one sink, as the cluster's configuration names it now. */
    async deliverNotification(input: DeliverNotificationInput): Promise<DeliveryAnswer> {
      const sink = clusters(input.cluster).config.notify?.find((s) => s.name === input.sink);
      if (!sink)
        throw failure(
          ErrorType.ClusterConfigInvalid,
          `notify: cluster ${input.cluster} has no sink ${input.sink} in its configuration`,
          true,
        );
      return { ...(await postToSink(sink, input.event)), attempt: attemptNow() };
    },
  };
}
