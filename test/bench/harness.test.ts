import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { requestPaths } from '../../bench/fleet.ts';
import { pathsLoad, sentAfter } from '../../bench/harness.ts';

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
