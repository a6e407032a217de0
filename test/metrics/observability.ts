import { createServer, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { httpGet } from '../../sim/cluster/wait-for.js';

/** One sample of the Prometheus text exposition format: `name{label="v",...} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the exposition text (comments skipped); throws on a line it cannot read, so a format change shows. */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (m[2] ?? '').matchAll(LABEL))
      labels[key as string] = (raw as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`not a number in: ${line}`);
    samples.push({ name: m[1] as string, labels, value });
  }
  return samples;
}

/** GET /metrics and parse it. */
export async function scrape(address: string): Promise<Sample[]> {
  const res = await httpGet(`http://${address}/metrics`);
  if (res.status !== 200) throw new Error(`GET http://${address}/metrics: ${res.status}`);
  return parseExposition(res.body);
}

/** The sum of a metric's samples whose labels include `where`. */
export function total(samples: Sample[], name: string, where: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

export const has = (samples: Sample[], name: string) => samples.some((s) => s.name === name);

/** A span as received over OTLP/HTTP JSON, with its attributes flattened to strings. */
export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  service?: string;
  attributes: Record<string, string>;
}

export interface OtlpReceiver {
  url: string;
  /** Every request received: method, path, content type. */
  requests: { method: string; path: string; contentType: string }[];
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { spans?: { name: string; traceId: string; spanId: string; parentSpanId?: string; attributes?: KeyValue[] }[] }[];
  }[];
}

const flat = (kvs: KeyValue[] = []): Record<string, string> =>
  Object.fromEntries(
    kvs.map((kv) => [kv.key, String(kv.value?.stringValue ?? kv.value?.intValue ?? kv.value?.boolValue ?? kv.value?.doubleValue ?? '')]),
  );

/** A local OTLP/HTTP traces endpoint that keeps what it is sent (JSON; protobuf bodies are counted, not decoded). */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver['requests'] = [];
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      requests.push({ method: req.method ?? '', path: req.url ?? '', contentType });
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      if (contentType.startsWith('application/json')) {
        const parsed = JSON.parse(body.toString('utf8')) as ExportRequest;
        for (const rs of parsed.resourceSpans ?? []) {
          const service = flat(rs.resource?.attributes)['service.name'];
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                name: s.name,
                traceId: s.traceId,
                spanId: s.spanId,
                ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
                ...(service ? { service } : {}),
                attributes: flat(s.attributes),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    requests,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
