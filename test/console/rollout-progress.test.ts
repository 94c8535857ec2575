import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { availableActions, parseGroupPercents, percentOf, progressShares } from '../../console/src/rollout-progress.ts';
import { createBody, EMPTY_ROLLOUT_FORM, previewBody } from '../../console/src/rollout-form.ts';

test('typed group percents are read as cumulative whole percents, with or without % signs', () => {
  assert.deepEqual(parseGroupPercents('1, 10, 100'), { percents: [1, 10, 100] });
  assert.deepEqual(parseGroupPercents(' 5%  50% 100% '), { percents: [5, 50, 100] });
});

test('group percents that the API would refuse are explained before they are sent', () => {
  assert.deepEqual(parseGroupPercents(''), { error: 'Give at least one group, e.g. 1, 10, 100.' });
  assert.deepEqual(parseGroupPercents('10, 10'), { error: 'Percents are cumulative: 10 must be greater than 10, the group before it.' });
  assert.deepEqual(parseGroupPercents('0, 100'), { error: '“0” is not a whole percent from 1 to 100.' });
  assert.deepEqual(parseGroupPercents('50, 101'), { error: '“101” is not a whole percent from 1 to 100.' });
  assert.deepEqual(parseGroupPercents('2.5, 100'), { error: '“2.5” is not a whole percent from 1 to 100.' });
  assert.ok('error' in parseGroupPercents(Array.from({ length: 21 }, (_, index) => index + 1).join(',')));
});

test('any strictly increasing list of 1–100 (up to 20) is read back as written', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 20 }), (values) => {
      const percents = [...values].sort((a, b) => a - b);
      assert.deepEqual(parseGroupPercents(percents.join(', ')), { percents });
    }),
  );
});

test('a progress percentage is rounded down, so a group is never shown done before it is', () => {
  assert.equal(percentOf(0, 0), 0);
  assert.equal(percentOf(129, 130), 99);
  assert.equal(percentOf(130, 130), 100);
  assert.equal(percentOf(1, 3), 33);
});

test('the bar segments are the shares of updated, failed and offered members, and say so in words', () => {
  const shares = progressShares({ scheduled: 0, blocked: 0, silent: 0, offered: 5, updated: 12, failed: 3 });

  assert.deepEqual([shares.updated, shares.failed, shares.offered], [60, 15, 25]);
  assert.equal(shares.summary, '12 of 20 updated (60 %), 3 failed');
  assert.equal(progressShares({ scheduled: 0, blocked: 0, silent: 0, offered: 0, updated: 0, failed: 0 }).summary, '0 of 0 updated (0 %)');
  // Blocked members are members: they count in the whole the shares are of.
  assert.equal(progressShares({ scheduled: 0, blocked: 4, silent: 0, offered: 0, updated: 12, failed: 4 }).summary, '12 of 20 updated (60 %), 4 failed');
});

test('the bar segments never add up to more than the whole bar', () => {
  const count = fc.integer({ min: 0, max: 1_000_000 });
  fc.assert(
    fc.property(count, count, count, count, count, count, (scheduled, blocked, silent, offered, updated, failed) => {
      const shares = progressShares({ scheduled, blocked, silent, offered, updated, failed });
      assert.ok(shares.updated + shares.failed + shares.offered <= 100 + 1e-9);
      assert.ok(shares.updated >= 0 && shares.failed >= 0 && shares.offered >= 0);
    }),
  );
});

test('the actions offered are those the state allows; approval comes before start when it is required', () => {
  const at = (state: 'ready' | 'running' | 'paused' | 'finished' | 'aborted', approval_required = false, approved_at: string | null = null) =>
    availableActions({ state, approval_required, approved_at });

  assert.deepEqual(at('ready'), ['start', 'abort']);
  assert.deepEqual(at('ready', true), ['approve', 'abort']);
  assert.deepEqual(at('ready', true, '2026-11-23T01:00:00.000Z'), ['start', 'abort']);
  assert.deepEqual(at('running'), ['pause', 'advance', 'abort']);
  assert.deepEqual(at('paused'), ['resume', 'abort']);
  assert.deepEqual(at('finished'), []);
  assert.deepEqual(at('aborted'), []);
});

test('the preview sends who, what, which OKMs and which groups; the create adds the pace, window and start', () => {
  const form = {
    ...EMPTY_ROLLOUT_FORM,
    customer: ' acme ',
    version: '2.5.0',
    groups: '5, 100',
    filter_serial_numbers: 'OKM-1\nOKM-2, OKM-1',
    success_threshold: '90',
    error_threshold: 'lots',
    window_from: '22:00',
    window_to: '06:00',
    start_at: '2026-11-24T22:00',
  };

  assert.deepEqual(previewBody(form), {
    body: { kind: 'kas', version: '2.5.0', customer: 'acme', filter: { serial_numbers: ['OKM-1', 'OKM-2'] }, groups: [{ percent: 5 }, { percent: 100 }] },
  });
  const made = createBody(form);
  assert.ok('body' in made);
  assert.equal(made.body.success_threshold, 90);
  assert.equal(made.body.error_threshold, 'lots', 'a value the API refuses goes as typed, for its message');
  assert.deepEqual(made.body.maintenance_window, { from: '22:00', to: '06:00' });
  assert.equal(made.body.start_at, new Date('2026-11-24T22:00').toISOString());
});

test('a form without a version or with unreadable groups names the field instead of asking the API', () => {
  assert.deepEqual(previewBody(EMPTY_ROLLOUT_FORM), { problem: { field: 'version', message: 'Choose a release of the catalog.' } });
  assert.deepEqual(createBody({ ...EMPTY_ROLLOUT_FORM, version: '2.5.0', groups: '50, 20' }), {
    problem: { field: 'groups', message: 'Percents are cumulative: 20 must be greater than 50, the group before it.' },
  });
});
