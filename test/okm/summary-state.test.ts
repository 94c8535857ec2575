import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SUMMARY_STATES, summaryStateOf, type StateFacts } from '../../src/okm/fleet-states.ts';

const facts = (overrides: Partial<StateFacts>): StateFacts => ({ lastCorrection: null, neverPolled: false, overdue: false, stuck: false, ...overrides });

test('an OKM has one state to show, the first that applies: never polled, overdue, stuck, drifting, in step', () => {
  assert.deepEqual(SUMMARY_STATES, ['never_polled', 'overdue', 'stuck', 'drifting', 'in_step']);
  assert.equal(summaryStateOf(facts({})), 'in_step');
  assert.equal(summaryStateOf(facts({ lastCorrection: 'cacheMode' })), 'drifting');
  // Stuck on an offer the retry policy holds back: its poll was answered {}, so in step, and it shows stuck.
  assert.equal(summaryStateOf(facts({ stuck: true })), 'stuck');
  assert.equal(summaryStateOf(facts({ stuck: true, lastCorrection: 'kasFirmware' })), 'stuck');
  assert.equal(summaryStateOf(facts({ stuck: true, overdue: true, lastCorrection: 'kasFirmware' })), 'overdue');
  assert.equal(summaryStateOf(facts({ neverPolled: true })), 'never_polled');
});
