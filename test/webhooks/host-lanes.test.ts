import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ANSWERING_MS, HOST_BACKLOG_FACTOR, HostLanes, type HeldRow } from '../../src/webhooks/host-lanes.ts';

interface Row {
  host: string;
  id: number;
}

let nextId = 0;
const rowsOf = (host: string, count: number): Row[] => Array.from({ length: count }, () => ({ host, id: nextId++ }));
const ids = (held: readonly HeldRow<Row>[]) => held.map(({ row }) => row.id);

test('a host gets at most perHost rows sent at once; a row sent frees its slot for the next, oldest first', () => {
  const lanes = new HostLanes<Row>({ perHost: 2, concurrency: 10, fanOutRoom: 100 });
  const rows = rowsOf('a.example', 5);
  lanes.take(rows, 'claim-1', 0);

  const first = lanes.startable();
  assert.deepEqual(ids(first), [rows[0]!.id, rows[1]!.id]);
  assert.deepEqual(first.map(({ token }) => token), ['claim-1', 'claim-1']);
  assert.deepEqual(lanes.startable(), []);

  assert.equal(lanes.sent(rows[0]!, 10), true);
  assert.equal(lanes.sent(rows[0]!, 11), false, 'a row is sent once');
  assert.deepEqual(ids(lanes.startable()), [rows[2]!.id]);
  assert.deepEqual(lanes.counts('a.example'), { sending: 2, recording: 1, waiting: 2 });
  assert.equal(lanes.backlog('a.example'), 4, 'a sent row no longer needs its host');
  assert.equal(lanes.held, 5, 'a sent row is held until its outcome is written');
});

test('the process sends at most concurrency rows at once over all hosts; a hanging host holds only its own slots', () => {
  const lanes = new HostLanes<Row>({ perHost: 2, concurrency: 3, fanOutRoom: 100 });
  const hanging = rowsOf('hanging.example', 4);
  const answering = rowsOf('answering.example', 4);
  lanes.take(hanging, 't', 0);
  lanes.take(answering, 't', 0);

  assert.deepEqual(ids(lanes.startable()), [hanging[0]!.id, hanging[1]!.id, answering[0]!.id]);
  for (const row of answering.slice(0, 3)) {
    lanes.finished(row, 1);
    lanes.startable();
  }
  assert.deepEqual(lanes.counts('hanging.example'), { sending: 2, recording: 0, waiting: 2 });
  assert.deepEqual(lanes.counts('answering.example'), { sending: 1, recording: 0, waiting: 0 });
  assert.equal(lanes.sending, 3);
});

test('a lane goes once its last row is finished; a claim may take the host share less the backlog, within the process room', () => {
  const lanes = new HostLanes<Row>({ perHost: 1, concurrency: 2, fanOutRoom: 100 });
  assert.equal(lanes.maxHeldPerHost, HOST_BACKLOG_FACTOR);
  assert.equal(lanes.maxHeld, 2 * HOST_BACKLOG_FACTOR);
  const rows = rowsOf('a.example', 3);
  lanes.take(rows, 't', 0);
  assert.equal(lanes.claimRoom('a.example', lanes.maxHeldPerHost), HOST_BACKLOG_FACTOR - 3);
  assert.equal(lanes.claimRoom('b.example', lanes.maxHeldPerHost), Math.min(HOST_BACKLOG_FACTOR, 2 * HOST_BACKLOG_FACTOR - 3));

  for (const row of rows) {
    assert.deepEqual(ids(lanes.startable()), [row.id]);
    lanes.finished(row, 1);
  }
  assert.deepEqual([...lanes.hosts()], []);
  assert.equal(lanes.held, 0);
});

test('rows a fan-out took count against the fan-out room, not against the room of claims', () => {
  const lanes = new HostLanes<Row>({ perHost: 1, concurrency: 1, fanOutRoom: 10 });
  const fannedOut = rowsOf('a.example', 4);
  lanes.take(fannedOut, 't', 0, true);
  assert.equal(lanes.fanOutRoom(), 6);
  assert.equal(lanes.held, 0);
  lanes.startable();
  lanes.finished(fannedOut[0]!, 1);
  assert.equal(lanes.fanOutRoom(), 7);
});

test('a host not answering gives back its waiting rows beyond its usual share, newest first; an answering host keeps them', () => {
  const perHost = 1;
  const lanes = new HostLanes<Row>({ perHost, concurrency: 10, fanOutRoom: 100 });
  const share = lanes.maxHeldPerHost;
  const silent = rowsOf('silent.example', share + 3);
  const answering = rowsOf('answering.example', share + 3);
  lanes.take(silent, 't-silent', 0, true);
  lanes.take(answering, 't-answering', 0, true);
  lanes.startable();
  lanes.sent(answering[0]!, ANSWERING_MS);
  lanes.startable();

  const now = ANSWERING_MS + 1;
  const returned = lanes.trimIfNotAnswering('silent.example', now);
  assert.deepEqual(ids(returned), silent.slice(-3).map((row) => row.id));
  assert.deepEqual(returned.map(({ token }) => token), ['t-silent', 't-silent', 't-silent']);
  assert.equal(lanes.backlog('silent.example'), share);
  assert.deepEqual(lanes.trimIfNotAnswering('answering.example', now), [], 'it answered within ANSWERING_MS');
  assert.deepEqual(lanes.trimIfNotAnswering('silent.example', now), [], 'what is left is its share');
});

test("a fan-out's claims: any number for a host that answers, the usual share for one that does not, each leased past the rows ahead of it", () => {
  const perHost = 2;
  const lanes = new HostLanes<Row>({ perHost, concurrency: 10, fanOutRoom: 20 });
  const busy = rowsOf('busy.example', perHost);
  lanes.take(busy, 't', 0);
  lanes.startable();
  const lease = { attemptMs: 1_000, marginMs: 15_000 };
  const now = 10 * ANSWERING_MS;
  const claim = lanes.fanOutClaims('fan-out', now, 3, lease);

  const toNew = Array.from({ length: 5 }, () => claim('new.example'));
  assert.deepEqual(
    toNew.map((taken) => taken?.claimedUntil),
    [0, 0, 1, 1, 2].map((lanesFullAhead) => now + (lanesFullAhead + 1) * lease.attemptMs + lease.marginMs),
  );
  assert.ok(toNew.every((taken) => taken?.token === 'fan-out'));
  // Two in flight, both slots busy, no answer within ANSWERING_MS: one more makes its share of 3.
  assert.deepEqual(claim('busy.example'), { token: 'fan-out', claimedUntil: now + 2 * lease.attemptMs + lease.marginMs });
  assert.equal(claim('busy.example'), undefined);

  const rest = Array.from({ length: 20 }, () => claim('other.example')).filter((taken) => taken !== undefined);
  assert.equal(rest.length, 20 - 5 - 1, 'the fan-out room bounds the claims of one fan-out');
});

/** One step of a dispatcher's use of its lanes. */
type Step =
  | { kind: 'take'; host: number; count: number; byFanOut: boolean }
  | { kind: 'start' }
  | { kind: 'send'; pick: number }
  | { kind: 'finish'; pick: number }
  | { kind: 'trim'; host: number }
  | { kind: 'stop' }
  | { kind: 'wait'; ms: number };

const HOSTS = ['a.example', 'b.example', 'c.example'];
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('take' as const), host: fc.nat(HOSTS.length - 1), count: fc.integer({ min: 1, max: 12 }), byFanOut: fc.boolean() }),
  fc.constant({ kind: 'start' as const }),
  fc.record({ kind: fc.constant('send' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('trim' as const), host: fc.nat(HOSTS.length - 1) }),
  fc.constant({ kind: 'stop' as const }),
  fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 2 * ANSWERING_MS }) }),
);

test('whatever the order of claims, sends, finishes, trims and stops: no host and no process ever has more rows sent at once than allowed, and every row taken leaves exactly once', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 6 }), fc.array(step, { maxLength: 80 }), (perHost, concurrency, steps) => {
      const lanes = new HostLanes<Row>({ perHost, concurrency, fanOutRoom: 30 });
      const left = new Map<Row, number>();
      const leave = (returned: readonly HeldRow<Row>[]) => returned.forEach(({ row }) => left.set(row, (left.get(row) ?? 0) + 1));
      const taken: Row[] = [];
      let inFlight: Row[] = [];
      let now = 0;
      const check = () => {
        assert.ok(lanes.sending <= concurrency);
        let sending = 0;
        for (const host of HOSTS) {
          const counts = lanes.counts(host);
          assert.ok(counts.sending <= perHost, `${host}: ${counts.sending} sent at once`);
          sending += counts.sending;
        }
        assert.equal(sending, lanes.sending);
      };
      for (const action of steps) {
        if (action.kind === 'take') {
          const rows = rowsOf(HOSTS[action.host]!, action.count);
          taken.push(...rows);
          lanes.take(rows, `t${now}`, now, action.byFanOut);
        } else if (action.kind === 'start') {
          inFlight.push(...lanes.startable().map(({ row }) => row));
        } else if (action.kind === 'send' && inFlight.length > 0) {
          lanes.sent(inFlight[action.pick % inFlight.length]!, now);
        } else if (action.kind === 'finish' && inFlight.length > 0) {
          const [row] = inFlight.splice(action.pick % inFlight.length, 1);
          lanes.finished(row!, now);
          leave([{ row: row!, token: '' }]);
        } else if (action.kind === 'trim') {
          leave(lanes.trimIfNotAnswering(HOSTS[action.host]!, now));
        } else if (action.kind === 'stop') {
          for (const host of lanes.hosts()) leave(lanes.takeWaiting(host));
        } else if (action.kind === 'wait') {
          now += action.ms;
        }
        check();
      }
      // Everything still held ends: what is in flight finishes, what waits goes back.
      while (inFlight.length > 0) {
        for (const row of inFlight) {
          lanes.finished(row, now);
          leave([{ row, token: '' }]);
        }
        inFlight = lanes.startable().map(({ row }) => row);
        check();
      }
      for (const host of lanes.hosts()) leave(lanes.takeWaiting(host));

      for (const row of taken) assert.equal(left.get(row), 1, `row ${row.id} left ${left.get(row) ?? 0} times`);
      assert.equal(left.size, taken.length);
      assert.equal(lanes.held, 0);
      assert.equal(lanes.sending, 0);
      assert.equal(lanes.fanOutRoom(), 30);
      assert.deepEqual([...lanes.hosts()], []);
    }),
    { numRuns: 300 },
  );
});

test('a row cannot be marked sent unless it was handed out to be sent', () => {
  const lanes = new HostLanes<Row>({ perHost: 1, concurrency: 1, fanOutRoom: 1 });
  const [row] = rowsOf('a.example', 1);
  lanes.take([row!], 't', 0);
  assert.throws(() => lanes.sent(row!, 0));
});
