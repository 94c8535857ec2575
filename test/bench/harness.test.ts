import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { requestPaths } from '../../bench/fleet.ts';
import { combineSlices, pathsLoad, sentAfter, type Figures } from '../../bench/harness.ts';

const reportedClock = (requestPath: string) => Number(new URL(requestPath, 'http://bench').searchParams.get('kasDateTime'));
const withoutClock = (requestPath: string) => {
  const url = new URL(requestPath, 'http://bench');
  url.searchParams.delete('kasDateTime');
  return url.href;
};

test('a fleet path sent six minutes after it was made reports a clock six minutes on, and nothing else changed', () => {
  for (const requestPath of requestPaths('/api/v1/config', 50)) {
    const sent = sentAfter(requestPath, 360_000);

    assert.equal(reportedClock(sent), reportedClock(requestPath) + 360_000);
    assert.equal(withoutClock(sent), withoutClock(requestPath));
  }
});

test('a path that reports no clock is sent as it is', () => {
  assert.equal(sentAfter('/api/v1/config/OKM-1?kasFirmware=3.0.0', 360_000), '/api/v1/config/OKM-1?kasFirmware=3.0.0');
});

test('a load of fleet paths reports the clock of when each request is sent, however long the run', (t) => {
  t.after(() => mock.timers.reset());
  mock.timers.enable({ apis: ['Date'], now: 1_800_000_000_000 });
  const paths = requestPaths('/api/v1/config', 20);
  const load = pathsLoad(paths, 1, 10);

  mock.timers.tick(3_600_000);
  const sent = Array.from({ length: paths.length }, () => load.next().path);

  assert.deepEqual(
    sent.map(reportedClock),
    paths.map((requestPath) => reportedClock(requestPath) + 3_600_000),
  );
});

const slice = (figures: Partial<Figures> & Pick<Figures, 'requestsPerSecond'>): Figures => ({ target: 'keyfleet', p50: 1, p99: 10, non2xx: 0, errors: 0, ...figures });

test('slices combine into the CPU per request of all their requests together, not the mean of their figures', () => {
  // 1 000 requests at 100 µs and 3 000 at 200 µs: 700 ms for 4 000 requests.
  const combined = combineSlices(
    [
      slice({ requestsPerSecond: 500, cpuMicrosPerRequest: 100, postgresCpuMicrosPerRequest: 50, requestsPerCommit: 10 }),
      slice({ requestsPerSecond: 1500, cpuMicrosPerRequest: 200, postgresCpuMicrosPerRequest: 150, requestsPerCommit: 30 }),
    ],
    2,
  );
  assert.equal(combined.requestsPerSecond, 1000);
  assert.equal(combined.cpuMicrosPerRequest, 175);
  assert.equal(combined.postgresCpuMicrosPerRequest, 125);
  // 100 commits and 100 commits for 4 000 requests.
  assert.equal(combined.requestsPerCommit, 20);
});

test('slices combine their latencies as the medians of their percentiles, and add up what failed', () => {
  const combined = combineSlices(
    [slice({ requestsPerSecond: 1, p50: 2, p99: 30, non2xx: 1 }), slice({ requestsPerSecond: 1, p50: 1, p99: 10, errors: 2 }), slice({ requestsPerSecond: 1, p50: 3, p99: 20 })],
    1,
  );
  assert.deepEqual([combined.p50, combined.p99, combined.non2xx, combined.errors], [2, 20, 1, 2]);
});

test('a figure that some slice lacks is left out of the combination rather than counted as zero', () => {
  const combined = combineSlices([slice({ requestsPerSecond: 10, cpuMicrosPerRequest: 100, requestsPerCommit: 5 }), slice({ requestsPerSecond: 10, cpuMicrosPerRequest: 100 })], 1);
  assert.equal(combined.cpuMicrosPerRequest, 100);
  assert.equal(combined.requestsPerCommit, undefined);
  assert.equal(combined.postgresCpuMicrosPerRequest, undefined);
});
