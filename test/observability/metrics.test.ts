import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

forEachDatabase('metrics', (kind) => {
  let subject: TestApp;
  before(async () => {
    subject = await buildTestApp(kind);
  });
  after(() => subject.close());

  test('/metrics is Prometheus text with request durations by route pattern and status', async () => {
    await subject.app.inject({ method: 'GET', url: '/api/v1/config/METRICS-1' });

    const response = await subject.app.inject({ method: 'GET', url: '/metrics' });

    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^text\/plain/);
    assert.match(
      response.body,
      /keyfleet_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/config\/:serialNumber",status_code="204"\} 1/,
    );
    assert.match(response.body, /process_resident_memory_bytes/);
  });

  test('polls are counted by outcome and corrections by the resolver that fired', async () => {
    await subject.app.inject({ method: 'GET', url: '/api/v1/config/METRICS-2' });
    await subject.app.inject({ method: 'GET', url: '/api/v1/config/METRICS-2?kasDateTime=1' });

    const body = (await subject.app.inject({ method: 'GET', url: '/metrics' })).body;

    assert.match(body, /keyfleet_okm_polls_total\{outcome="enrolled"\} [1-9]/);
    assert.match(body, /keyfleet_okm_polls_total\{outcome="corrected"\} 1/);
    assert.match(body, /keyfleet_okm_corrections_total\{resolver="kasDateTime"\} 1/);
  });

  test('the poll counters are totals since the start: reading /metrics again neither adds nor forgets', async () => {
    const countOf = (body: string, series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(body)?.[1]);
    const scrape = async () => (await subject.app.inject({ method: 'GET', url: '/metrics' })).body;
    await subject.app.inject({ method: 'GET', url: '/api/v1/config/METRICS-3' });
    await subject.app.inject({ method: 'GET', url: '/api/v1/config/METRICS-3?kasDateTime=1' });
    const first = await scrape();
    const corrected = countOf(first, 'keyfleet_okm_polls_total{outcome="corrected"}');
    const byResolver = countOf(first, 'keyfleet_okm_corrections_total{resolver="kasDateTime"}');
    assert.ok(corrected >= 1 && byResolver >= 1, first);
    assert.equal(countOf(await scrape(), 'keyfleet_okm_polls_total{outcome="corrected"}'), corrected);

    await subject.app.inject({ method: 'GET', url: '/api/v1/config/METRICS-3?kasDateTime=1' });
    const third = await scrape();
    assert.equal(countOf(third, 'keyfleet_okm_polls_total{outcome="corrected"}'), corrected + 1);
    assert.equal(countOf(third, 'keyfleet_okm_corrections_total{resolver="kasDateTime"}'), byResolver + 1);
  });

  test('the PostgreSQL connection pool is reported by state', { skip: kind !== 'postgres' && 'SQLite has one connection, no pool' }, async () => {
    const body = (await subject.app.inject({ method: 'GET', url: '/metrics' })).body;

    assert.match(body, /keyfleet_db_pool_connections\{state="total"\} [1-9]/);
    assert.match(body, /keyfleet_db_pool_connections\{state="waiting"\} 0/);
  });
});
