import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin, OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';

/**
 * OpenTelemetry tracing through Temporal's interceptors, off unless an OTLP/HTTP traces URL is given
 * (SKEWLESS_OTLP_ENDPOINT, `--otlp-endpoint`). Loaded only then (a dynamic import): with tracing off
 * the worker has no interceptor, no exporter, and its workflow bundle is the plain one.
 *
 * Spans: `RunWorkflow:<type>`, `StartActivity:<name>`, `StartChildWorkflowExecution:<type>` and the
 * handlers' spans from inside workflows (exported through a sink, so replay-safe: the SDK drops spans
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

function provider(endpoint: string, serviceName: string) {
  const resource = new Resource({ 'service.name': serviceName });
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }), { scheduledDelayMillis: 1000 });
  const tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  // Global: the activity interceptor reads the trace context from Temporal headers with the global propagator (W3C).
  tracerProvider.register();
  return { resource, processor, tracerProvider };
}

export function startTracing(endpoint: string, serviceName = 'skewless-worker'): Tracing {
  const { resource, processor, tracerProvider } = provider(endpoint, serviceName);
  return {
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor: processor, tracer: tracerProvider.getTracer('skewless') }),
    shutdown: () => tracerProvider.shutdown(),
  };
}

/** The CLI's side: its start, signal and update calls become spans that the workflow's spans continue. */
export function startClientTracing(endpoint: string): { interceptor: OpenTelemetryWorkflowClientInterceptor; shutdown(): Promise<void> } {
  const { tracerProvider } = provider(endpoint, 'skewless-cli');
  return { interceptor: new OpenTelemetryWorkflowClientInterceptor({ tracer: tracerProvider.getTracer('skewless') }), shutdown: () => tracerProvider.shutdown() };
}
