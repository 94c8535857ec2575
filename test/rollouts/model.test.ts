import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assignGroups, groupBoundaries, parseClockTime, formatClockTime, withinWindow } from '../../src/rollouts/model.ts';
import { formatDuration, parseDuration } from '../../src/shared/duration.ts';

const cumulativePercents = fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 20 }).map((percents) => percents.sort((a, b) => a - b));

test('groups: every OKM is in exactly one group up to the last percent, group sizes follow the cumulative percents, and a started first group is never empty', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.stringMatching(/^[A-Z0-9-]{1,12}$/), { maxLength: 300 }), cumulativePercents, (serials, percents) => {
      const assigned = assignGroups(serials, percents);
      const boundaries = groupBoundaries(serials.length, percents);

      assert.equal(assigned.length, boundaries.at(-1));
      assert.equal(new Set(assigned.map((member) => member.serialNumber)).size, assigned.length);
      percents.forEach((_, group) => assert.equal(assigned.filter((member) => member.group === group).length, boundaries[group]! - (boundaries[group - 1] ?? 0)));
      if (serials.length > 0) assert.ok(boundaries[0]! >= 1);
    }),
  );
});

test('groups: membership does not depend on the order the OKMs are listed in', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.stringMatching(/^[A-Z0-9-]{1,12}$/), { minLength: 1, maxLength: 100 }), cumulativePercents, (serials, percents) => {
      const sorted = (list: { serialNumber: string; group: number }[]) => [...list].sort((a, b) => a.serialNumber.localeCompare(b.serialNumber));
      assert.deepEqual(sorted(assignGroups(serials, percents)), sorted(assignGroups([...serials].reverse(), percents)));
    }),
  );
});

test('maintenance window: from–to the same day, spanning midnight, and the whole day when from equals to', () => {
  const at = (hour: number, minute = 0) => Date.UTC(2026, 10, 20, hour, minute);
  const night = { from: parseClockTime('22:00')!, to: parseClockTime('06:00')! };
  const day = { from: parseClockTime('09:00')!, to: parseClockTime('17:30')! };

  assert.deepEqual([at(21, 59), at(22), at(3), at(5, 59), at(6)].map((now) => withinWindow(night, 'UTC', now)), [false, true, true, true, false]);
  assert.deepEqual([at(8, 59), at(9), at(17, 29), at(17, 30)].map((now) => withinWindow(day, 'UTC', now)), [false, true, true, false]);
  assert.equal(withinWindow(night, 'Europe/Berlin', at(21, 30)), true, '22:30 in Berlin');
  assert.equal(withinWindow({ from: 600, to: 600 }, 'UTC', at(3)), true);
});

test('clock times and durations read back what they print', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 1439 }), (minutes) => assert.equal(parseClockTime(formatClockTime(minutes)), minutes)));
  fc.assert(fc.property(fc.integer({ min: 1, max: 1_000_000_000 }), (ms) => assert.equal(parseDuration(formatDuration(ms)), ms)));
  assert.deepEqual(['24:00', '7:00', '12:60', ''].map(parseClockTime), [undefined, undefined, undefined, undefined]);
});
