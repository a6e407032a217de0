import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, telemetryConfig } from '../../worker/config.js';

const refused = (f: () => unknown, message: RegExp) =>
  assert.throws(f, (err: Error) => err instanceof ConfigError && message.test(err.message));

describe('telemetryConfig: metrics and tracing settings', () => {
  it('is off unless set; a flag beats its variable', () => {
    assert.deepEqual(telemetryConfig({}, {}), {});
    assert.deepEqual(telemetryConfig({}, { SKEWLESS_METRICS_ADDRESS: '', SKEWLESS_OTLP_ENDPOINT: '' }), {});
    assert.deepEqual(
      telemetryConfig({}, { SKEWLESS_METRICS_ADDRESS: '0.0.0.0:9464', SKEWLESS_OTLP_ENDPOINT: 'http://otel:4318/v1/traces' }),
      { metricsAddress: '0.0.0.0:9464', otlpEndpoint: 'http://otel:4318/v1/traces' },
    );
    assert.deepEqual(
      telemetryConfig(
        { 'metrics-address': '127.0.0.1:9100', 'otlp-endpoint': 'https://otel.example/v1/traces' },
        { SKEWLESS_METRICS_ADDRESS: '0.0.0.0:9464', SKEWLESS_OTLP_ENDPOINT: 'http://otel:4318/v1/traces' },
      ),
      { metricsAddress: '127.0.0.1:9100', otlpEndpoint: 'https://otel.example/v1/traces' },
    );
    assert.deepEqual(telemetryConfig({ 'metrics-address': '[::]:9464' }, {}), { metricsAddress: '[::]:9464' });
  });

  it('refuses an address the SDK cannot bind and a URL that is not http(s), naming where it came from', () => {
    for (const bad of ['localhost:9464', '0.0.0.0', ':9464', '256.0.0.1:9464', '0.0.0.0:0', '0.0.0.0:65536', 'http://0.0.0.0:9464']) {
      refused(() => telemetryConfig({ 'metrics-address': bad }, {}), /^--metrics-address must be IP:PORT/);
      refused(() => telemetryConfig({}, { SKEWLESS_METRICS_ADDRESS: bad }), /^SKEWLESS_METRICS_ADDRESS must be IP:PORT/);
    }
    for (const bad of ['otel:4318', 'grpc://otel:4317', 'ftp://otel/v1/traces', 'http://user:token@otel:4318/v1/traces']) {
      refused(() => telemetryConfig({}, { SKEWLESS_OTLP_ENDPOINT: bad }), /^SKEWLESS_OTLP_ENDPOINT must be the http\(s\) URL/);
    }
    // A URL that might carry a credential is never echoed.
    refused(() => telemetryConfig({ 'otlp-endpoint': 'http://user:token@otel:4318/v1/traces' }, {}), /^(?!.*token)/);
  });
});
