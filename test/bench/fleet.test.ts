import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { phaseRankOf, requestPaths, seedFleet, serialOf } from '../../bench/fleet.ts';
import { withDb, withFreshDatabase } from '../../bench/harness.ts';

const serialsOf = (paths: string[]) => paths.map((requestPath) => new URL(requestPath, 'http://bench').pathname.split('/').pop()!);

test('the phase ranks of a fleet are a permutation of its positions', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5000 }), (fleetSize) => {
      const ranks = Array.from({ length: fleetSize }, (_, index) => phaseRankOf(index, fleetSize));

      assert.deepEqual(
        [...ranks].sort((a, b) => a - b),
        Array.from({ length: fleetSize }, (_, rank) => rank),
      );
    }),
  );
});

test('neighbours in serial number order are not neighbours in the poll order', () => {
  const fleetSize = 100_000;

  const gaps = Array.from({ length: 1000 }, (_, index) => Math.abs(phaseRankOf(index + 1, fleetSize) - phaseRankOf(index, fleetSize)));

  assert.ok(Math.min(...gaps) > 100, `smallest gap ${Math.min(...gaps)}`);
});

test('in fleet order, the requests poll every OKM once, in the order of their phase ranks', () => {
  const fleetSize = 500;

  const serials = serialsOf(requestPaths('/api/v1/config', fleetSize));

  const expected = Array.from({ length: fleetSize }, (_, index) => index)
    .sort((a, b) => phaseRankOf(a, fleetSize) - phaseRankOf(b, fleetSize))
    .map(serialOf);
  assert.deepEqual(serials, expected);
});

test('in fleet order over part of a fleet, the requests stay in that part, ordered by the ranks of the whole fleet', () => {
  const serials = serialsOf(requestPaths('/api/v1/config', 200, { firstIndex: 200, fleetSize: 400 }));

  const indexes = serials.map((serial) => Number(serial.slice('OKM-'.length)));
  assert.ok(indexes.every((index) => index >= 200 && index < 400));
  assert.equal(new Set(indexes).size, 200);
  const ranks = indexes.map((index) => phaseRankOf(index, 400));
  assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b));
});

test('in random order, the requests poll OKMs of the part asked only, most of them more than once', () => {
  const serials = serialsOf(requestPaths('/api/v1/config', 100, { firstIndex: 100, fleetSize: 200, order: 'random' }));

  const indexes = serials.map((serial) => Number(serial.slice('OKM-'.length)));
  assert.ok(indexes.every((index) => index >= 100 && index < 200));
  assert.ok(indexes.length > new Set(indexes).size);
});

for (const database of ['sqlite', 'postgres'] as const) {
  test(`on ${database}, the seeded fleet's last polls follow the poll order of fleet-order requests, and none is due or marked overdue`, async () => {
    const fleetSize = 300;

    const { lastSyncs, polledFirst } = await withFreshDatabase(database, async ({ env }) => {
      await seedFleet(env, fleetSize);
      return withDb(env, async (db) => ({
        lastSyncs: await db
          .selectFrom('okms')
          .leftJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number')
          .select(['okms.serial_number', 'okm_polls.last_sync_time', 'okms.polling_interval', 'okms.overdue_at'])
          .orderBy('okm_polls.last_sync_time')
          .orderBy('okms.serial_number')
          .execute(),
        polledFirst: serialsOf(requestPaths('/api/v1/config', fleetSize)),
      }));
    });

    assert.deepEqual(
      lastSyncs.map((row) => row.serial_number),
      polledFirst,
    );
    const now = Date.now();
    for (const row of lastSyncs) {
      assert.ok(row.last_sync_time !== null && Number(row.last_sync_time) <= now, `${row.serial_number} last synced ${row.last_sync_time}`);
      // 150 s: the server's default polling interval, which the benchmarks run with.
      assert.ok(Number(row.last_sync_time) + 3 * 1000 * (row.polling_interval ?? 150) > now, `${row.serial_number} already due`);
      assert.equal(row.overdue_at, null, `${row.serial_number} marked`);
    }
  });
}
