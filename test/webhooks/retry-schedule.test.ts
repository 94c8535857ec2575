import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadSettings, type SettingsError } from '../../src/config/settings.ts';
import { MAX_RETRY_AFTER_MS, nextAttemptAt, parseRetryAfter } from '../../src/webhooks/retry-schedule.ts';

const SCHEDULE = loadSettings({}).webhookRetrySchedule;
const NOW = 1_700_000_000_000;

describe('retry schedule', () => {
  test('the default is about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    assert.deepEqual(SCHEDULE, [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  });

  test('each retry is its scheduled delay with at most ±20 % jitter', () => {
    SCHEDULE.forEach((delay, index) => {
      assert.equal(nextAttemptAt(SCHEDULE, index + 1, NOW, undefined, () => 0), NOW + delay * 0.8);
      assert.equal(nextAttemptAt(SCHEDULE, index + 1, NOW, undefined, () => 0.5), NOW + delay);
      assert.equal(nextAttemptAt(SCHEDULE, index + 1, NOW, undefined, () => 1), NOW + delay * 1.2);
    });
  });

  test('after the last retry there is no next attempt: the delivery has failed', () => {
    assert.equal(nextAttemptAt(SCHEDULE, SCHEDULE.length + 1, NOW, undefined), undefined);
  });

  test('Retry-After delays the next attempt but never brings it forward, and is capped at 24 h', () => {
    assert.equal(nextAttemptAt(SCHEDULE, 1, NOW, 60_000, () => 0.5), NOW + 60_000);
    assert.equal(nextAttemptAt(SCHEDULE, 2, NOW, 1_000, () => 0.5), NOW + 300_000);
    assert.equal(nextAttemptAt(SCHEDULE, 1, NOW, 10 * MAX_RETRY_AFTER_MS, () => 0.5), NOW + MAX_RETRY_AFTER_MS);
  });

  test('Retry-After is read as seconds or an HTTP date; anything else is ignored', () => {
    assert.equal(parseRetryAfter('120', NOW), 120_000);
    assert.equal(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW), 90_000);
    assert.equal(parseRetryAfter(new Date(NOW - 90_000).toUTCString(), NOW), 0);
    assert.equal(parseRetryAfter('soon', NOW), undefined);
    assert.equal(parseRetryAfter(undefined, NOW), undefined);
  });

  test('WEBHOOK_RETRY_SCHEDULE takes durations in ms, s, m, h, d and names a bad one', () => {
    assert.deepEqual(loadSettings({ WEBHOOK_RETRY_SCHEDULE: '200ms, 1s,2m,1h,1d' }).webhookRetrySchedule, [200, 1000, 120_000, 3_600_000, 86_400_000]);
    assert.throws(() => loadSettings({ WEBHOOK_RETRY_SCHEDULE: '5s,soon' }), (error: SettingsError) => error.message.startsWith('WEBHOOK_RETRY_SCHEDULE: expected'));
    assert.throws(() => loadSettings({ WEBHOOK_TIMEOUT_MS: '0' }), /WEBHOOK_TIMEOUT_MS: expected 100–120000/);
  });
});
