import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { RequestDurations } from '../../src/observability/request-durations.ts';

const NAME = 'test_request_duration_seconds';
const HELP = 'requests';
const BOUNDS = [0.001, 0.01, 0.1, 1];

/** The exposition's samples, each `name{labels sorted} value`, sorted: the text's order of labels and lines aside. */
function samples(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^(\w+)(?:\{(.*)\})? (.+)$/.exec(line);
      assert.ok(match, line);
      const labels = (match[2] ?? '').split(/,(?=\w+=")/).filter(Boolean).sort();
      return `${match[1]}{${labels.join(',')}} ${match[3]}`;
    })
    .sort();
}

const observation = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT'),
  route: fc.constantFrom('/api/v1/config/:serialNumber', '/api/v1/okms', 'unmatched'),
  statusCode: fc.constantFrom(200, 204, 404, 503),
  seconds: fc.oneof(fc.double({ min: 0, max: 3, noNaN: true }), fc.constantFrom(...BOUNDS)),
});

test("the request durations are exposed exactly as prom-client's own histogram exposes the same observations", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(observation, { maxLength: 40 }), async (observations) => {
      const ours = new Registry();
      const durations = new RequestDurations(NAME, HELP, BOUNDS);
      ours.registerMetric(durations.asMetric());
      const theirs = new Registry();
      const histogram = new Histogram({ name: NAME, help: HELP, labelNames: ['method', 'route', 'status_code'], buckets: BOUNDS, registers: [theirs] });
      for (const { method, route, statusCode, seconds } of observations) {
        durations.observe(method, route, statusCode, seconds);
        histogram.observe({ method, route, status_code: String(statusCode) }, seconds);
      }
      const [ourText, theirText] = [await ours.metrics(), await theirs.metrics()];
      assert.deepEqual(samples(ourText), samples(theirText));
      assert.equal(ourText.split('\n').slice(0, 2).join('\n'), theirText.split('\n').slice(0, 2).join('\n'));
    }),
  );
});

test('a duration on a bound counts in that bound\'s bucket, and reset forgets every series', async () => {
  const registry = new Registry();
  const durations = new RequestDurations(NAME, HELP, BOUNDS);
  registry.registerMetric(durations.asMetric());
  durations.observe('GET', '/a', 200, 0.01);
  const text = await registry.metrics();
  assert.match(text, /test_request_duration_seconds_bucket\{method="GET",route="\/a",status_code="200",le="0.001"\} 0/);
  assert.match(text, /test_request_duration_seconds_bucket\{method="GET",route="\/a",status_code="200",le="0.01"\} 1/);
  registry.resetMetrics();
  assert.doesNotMatch(await registry.metrics(), /_bucket/);
  assert.deepEqual((await registry.getMetricsAsJSON()).map(({ name }) => name), [NAME]);
});
