import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, type Context, type ContextManager } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';

/**
 * OpenTelemetry tracing through Temporal's interceptors, off unless an OTLP/HTTP traces URL is given
 * (SKEWLESS_OTLP_ENDPOINT, `--otlp-endpoint`). Loaded only then (a dynamic import): with tracing off
 * the worker has no interceptor, no exporter, and its workflow bundle is the plain one.
 *
 * Spans: `RunWorkflow:<type>`, `StartActivity:<name>`, `StartChildWorkflow:<type>`, `SignalWorkflow:<name>`
 * and the handlers' spans from inside workflows (exported through a sink, so replay-safe: the SDK drops spans
 * of replayed code), `RunActivity:<name>` around each activity attempt, linked by trace context in
 * Temporal headers. Every span carries the workflow id (`temporalWorkflowId` on activity spans, the
 * workflow's info, `workflowId`, on workflow spans). The exporter posts OTLP JSON.
 */
export interface Tracing {
  /** For Worker.create({ plugins }): the workflow, activity and client interceptors and the span sink. */
  plugin: OpenTelemetryPlugin;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * The active trace context follows async calls (AsyncLocalStorage), so that an activity's span is the
 * child of the span that scheduled it: without a context manager OpenTelemetry's API forgets the
 * context a `with()` sets, and every activity span would start a trace of its own.
 */
class AsyncContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(context, () => fn.call(thisArg, ...args));
  }
  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (thisArg: unknown, args: unknown[]) =>
      this.with(context, () => (target as (...a: unknown[]) => unknown).apply(thisArg, args));
    return function bound(this: unknown, ...args: unknown[]) {
      return run(this, args);
    } as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

export function startTracing(endpoint: string, serviceName = 'skewless-worker'): Tracing {
  const resource = new Resource({ 'service.name': serviceName });
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }), { scheduledDelayMillis: 1000 });
  const tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  // Global: the activity interceptor reads the trace context from Temporal headers with the global
  // propagator (W3C, the default) and runs the activity in it through the global context manager.
  tracerProvider.register({ contextManager: new AsyncContextManager() });
  return {
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor: processor, tracer: tracerProvider.getTracer('skewless') }),
    shutdown: () => tracerProvider.shutdown(),
  };
}
