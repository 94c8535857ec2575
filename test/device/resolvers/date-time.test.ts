import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dateTime } from '../../../src/device/resolvers/date-time.ts';
import { desiredState, reportInSync, SERVER_TIME } from './fixtures.ts';

const desired = desiredState();
const reportedAt = (kasDateTime: number | undefined) => dateTime(desired, reportInSync(desired, { kasDateTime }));

test('when kasDateTime is exactly 5 minutes behind or ahead, no correction', () => {
  assert.equal(reportedAt(SERVER_TIME - 300_000), undefined);
  assert.equal(reportedAt(SERVER_TIME + 300_000), undefined);
});

test('when kasDateTime is 5 minutes and 1 ms behind or ahead, server time is sent', () => {
  assert.deepEqual(reportedAt(SERVER_TIME - 300_001), { kasDateTime: SERVER_TIME });
  assert.deepEqual(reportedAt(SERVER_TIME + 300_001), { kasDateTime: SERVER_TIME });
});

test('when kasDateTime is unknown, server time is sent', () => {
  assert.deepEqual(reportedAt(undefined), { kasDateTime: SERVER_TIME });
});
