import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { HTTP_DURATION_BUCKETS, HttpRequestMetrics } from '../../src/services/http-metrics.ts';

/** prom-client's own histogram and counter of the same names, help and buckets: what the tallies must equal. */
function promClientMetrics() {
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const histogram = new Histogram({
    name: 'matricula_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route pattern and status.',
    labelNames,
    buckets: [...HTTP_DURATION_BUCKETS],
    registers: [registry],
  });
  const counter = new Counter({
    name: 'matricula_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames,
    registers: [registry],
  });
  return {
    registry,
    record(method: string, route: string, status: number, seconds: number) {
      const labels = { method, route, status: String(status) };
      histogram.observe(labels, seconds);
      counter.inc(labels);
    },
  };
}

test("the HTTP metrics read as prom-client's Histogram and Counter would of the same requests", async () => {
  const registry = new Registry();
  const ours = new HttpRequestMetrics(registry);
  const theirs = promClientMetrics();
  const route = '/verification/v1/sessions/:sessionId';
  // Label sets interleaved, values on each bound, between bounds, at zero and past the last bound.
  const requests: Array<[string, string, number, number]> = [
    ['GET', route, 200, 0.0012],
    ['POST', '/verification/v1/sessions', 201, 0.005],
    ['GET', route, 404, 0.01],
    ['GET', route, 200, 0],
    ['GET', 'unmatched', 404, 0.0051],
    ['GET', route, 200, 10],
    ['GET', route, 200, 10.5],
    ['POST', '/verification/v1/sessions', 201, 2.5],
    ['GET', route, 404, 0.3],
    ...HTTP_DURATION_BUCKETS.map((bound): [string, string, number, number] => ['GET', route, 200, bound]),
  ];
  for (const [method, path, status, seconds] of requests) {
    ours.record(method, path, status, seconds);
    theirs.record(method, path, status, seconds);
  }
  const text = await registry.metrics();
  assert.equal(text, await theirs.registry.metrics(), 'the exposition, byte for byte');
  // As JSON: prom-client's sum and count samples hold an undefined exemplar, which JSON leaves out.
  const json = async (r: Registry) => JSON.parse(JSON.stringify(await r.getMetricsAsJSON())) as unknown;
  assert.deepEqual(await json(registry), await json(theirs.registry));
  assert.match(
    text,
    /matricula_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="unmatched",status="404"\} 1/,
  );

  registry.resetMetrics();
  theirs.registry.resetMetrics();
  assert.equal(await registry.metrics(), await theirs.registry.metrics(), 'reset: no samples');
  ours.record('GET', route, 200, 0.02);
  theirs.record('GET', route, 200, 0.02);
  assert.equal(await registry.metrics(), await theirs.registry.metrics(), 'counted again after a reset');
});
