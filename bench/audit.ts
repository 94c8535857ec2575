/**
 * What the audit trail (issue 36, contract §18) costs, on SQLite and PostgreSQL:
 *
 * - acl: PUT /api/v1/acls/{id} of ACLs of 50 users × 20 locks, each update flipping one
 *   permission, round-robin over many ACLs so that no two updates wait for one row; this
 *   checkout (each update and its entry in one transaction) against `--base`, the same server
 *   before the audit trail. Target: with ≤ 1.2 × without (time per update, CPU, p99).
 * - dlock: POST /v1/dlock enrolments of new serial numbers, this checkout against `--base`;
 *   on PostgreSQL also with `serve --workers N` on both sides: the chain is one for every
 *   process, and must not make their changes wait for one another. Target: enrolments/s with ≥ 0.8 × without.
 * - verify: `keyfleet audit verify` (compiled) over `--entries` entries with their signed
 *   checkpoints, timed from process start to exit. Target ≤ 30 s at 1 M.
 * - search: GET /api/v1/audit-log?entity_type=acl&entity_id=… (the first page, 50 entries at
 *   most) of random ACLs among `--entities`, by an operator token, over that same trail.
 *   Target p99 < 20 ms at 1 M.
 *
 * The trail of verify and search is written through recordChanges (100 changes a call, 5 000
 * a transaction), an entry every 30 s: ACL cells changed by people and a sync token (about
 * two thirds, spread over the ACLs), OKM configurations, DLock enrolments by API keys; then
 * every checkpoint due is signed, and the audit.entry cursor set to the head.
 *
 * The two checkouts are built (dist/, as `npm start` runs) and served side by side, each on a
 * fresh database of its own seeded alike through the API (the base has no audit tables), and
 * measured in alternating rounds whose order rotates, so that a host that speeds up or slows
 * down during the run shifts both alike. CPU per request is the server's process tree's, plus
 * every PostgreSQL process's on PostgreSQL (from /proc); ratios are the median of each
 * round's ratio.
 *
 * The figures in bench/RESULTS.md compare this checkout with the same commit without its
 * entries: bench/audit-no-trail.patch makes recordChanges and changeWithEntry write the change
 * alone and aclChange describe nothing, so that the base does exactly the same update or
 * enrolment without its entry (and the chainer has nothing to chain):
 *
 *   git worktree add /tmp/kf-notrail HEAD && git -C /tmp/kf-notrail apply "$PWD/bench/audit-no-trail.patch"
 *   ln -s "$PWD/node_modules" /tmp/kf-notrail/node_modules
 *   npm run bench:audit -- --base /tmp/kf-notrail --only acl,dlock --rounds 5 --save
 *
 * (Earlier figures compared with bff4059, the commit before the trail; since then the updates
 * have changed beside the trail, and that base no longer does the same update.)
 *
 *   npm run bench:audit -- --base DIR [--sqlite] [--postgres] [--rounds 5]
 *       [--duration 10] [--connections 50] [--acls 1000] [--workers N] [--entries 1000000]
 *       [--entities 10000] [--search-connections 10] [--only acl,dlock,verify,search] [--save]
 *       [--cpu-prof DIR]
 *
 * With neither --sqlite nor --postgres, both. --base is needed by acl and dlock only.
 * --workers: the processes of the PostgreSQL dlock run (default 2–4, by the CPUs). --save
 * writes the output to bench/results/audit-<sqlite|postgres|both>[-<parts>].txt. --cpu-prof
 * DIR: V8 CPU profiles of every server (they slow it: not for the figures).
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { chainAllPendingEntries } from '../src/audit/chainer.ts';
import { signDueCheckpoints } from '../src/audit/checkpoints.ts';
import { recordChanges, type Change, type ChangeSource } from '../src/audit/trail.ts';
import { ensureActiveSigningKey, loadActiveSigningKey } from '../src/auth/signing-keys.ts';
import { createKeyRing } from '../src/key-ring.ts';
import { loadMasterKey } from '../src/secrets/master-key.ts';
import {
  REPO_ROOT,
  buildServer,
  forEachBenchDatabase,
  keyfleetCliOf,
  measure,
  median,
  startKeyfleet,
  stop,
  withDb,
  withFreshDatabase,
  type BenchDatabase,
  type Figures,
  type Load,
} from './harness.ts';

const PARTS = ['acl', 'dlock', 'verify', 'search'] as const;
type Part = (typeof PARTS)[number];

const { values: options } = parseArgs({
  options: {
    sqlite: { type: 'boolean', default: false },
    postgres: { type: 'boolean', default: false },
    base: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    acls: { type: 'string', default: '1000' },
    workers: { type: 'string', default: String(Math.min(4, Math.max(2, os.cpus().length))) },
    entries: { type: 'string', default: '1000000' },
    entities: { type: 'string', default: '10000' },
    'search-connections': { type: 'string', default: '10' },
    only: { type: 'string' },
    save: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
  },
});

const ROUNDS = Number(options.rounds);
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);
const ACL_COUNT = Number(options.acls);
const WORKERS = Number(options.workers);
const ENTRY_COUNT = Number(options.entries);
const ENTITY_COUNT = Number(options.entities);
const SEARCH_CONNECTIONS = Number(options['search-connections']);
/** Runs of `keyfleet audit verify`: each walks the whole trail, up to half a minute at 1 M. */
const VERIFY_RUNS = Math.min(ROUNDS, 3);
const selectedParts = new Set<Part>(
  (options.only ?? PARTS.join(',')).split(',').map((part) => {
    if (!(PARTS as readonly string[]).includes(part)) throw new Error(`--only: expected some of ${PARTS.join(',')}, got "${part}"`);
    return part as Part;
  }),
);
const comparesWithBase = selectedParts.has('acl') || selectedParts.has('dlock');
if (comparesWithBase && !options.base) throw new Error('--base: the checkout before the audit trail, e.g. --base /tmp/keyfleet-base (git worktree add /tmp/keyfleet-base bff4059)');

interface Checkout {
  name: string;
  dir: string;
}
const THIS: Checkout = { name: 'with audit trail', dir: REPO_ROOT };
const BASE: Checkout | undefined = options.base === undefined ? undefined : { name: 'base', dir: path.resolve(options.base) };

// ---- output ----

const output: string[] = [];
function say(line = ''): void {
  console.log(line);
  output.push(line);
}

/** A Markdown table: what the console shows is what RESULTS.md takes. */
function table(rows: Record<string, string | number>[]): void {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const cells = rows.map((row) => columns.map((column) => String(row[column] ?? '')));
  const widths = columns.map((column, index) => Math.max(column.length, ...cells.map((row) => row[index]!.length)));
  const line = (values: string[]) => `| ${values.map((value, index) => value.padEnd(widths[index]!)).join(' | ')} |`;
  say(line(columns));
  say(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of cells) say(line(row));
}

interface Verdict {
  part: string;
  database: string;
  figure: string;
  value: string;
  target: string;
  met: string;
}
const verdicts: Verdict[] = [];

const met = (ok: boolean) => (ok ? 'yes' : 'NO');
const cpuOf = (figures: Figures) => (figures.cpuMicrosPerRequest ?? 0) + (figures.postgresCpuMicrosPerRequest ?? 0);
const gitHead = (dir: string) => execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
const gitDirty = (dir: string) => (execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: dir, encoding: 'utf8' }).trim() === '' ? '' : ' + uncommitted changes');

// ---- servers ----

interface Served {
  port: number;
  child: ChildProcess;
}

/**
 * The compiled `keyfleet serve` of a checkout; with `workers`, that many processes on
 * PostgreSQL. With --cpu-prof, its V8 CPU profiles go to <dir>/<run>/<checkout>.
 */
function serve(checkout: Checkout, env: Record<string, string>, run: string, workers?: number): Promise<Served> {
  return startKeyfleet(env, {
    built: true,
    dir: checkout.dir,
    cpuProfileDir: options['cpu-prof'] && path.join(options['cpu-prof'], run, checkout.name.replaceAll(' ', '-')),
    ...(workers === undefined ? {} : { command: () => ['serve', '--workers', String(workers)] }),
  });
}

const cli = (checkout: Checkout, env: Record<string, string>, ...args: string[]) => keyfleetCliOf({ dir: checkout.dir, built: true }, env, ...args);

/** One request of `load`, sent before it runs: a load whose requests fail stops the bench at once, with the answer. */
async function probe(port: number, load: Load): Promise<Response> {
  const request = load.next();
  const response = await fetch(`http://127.0.0.1:${port}${request.path}`, { method: request.method ?? 'GET', headers: request.headers ?? {}, ...(request.body === undefined ? {} : { body: request.body }) });
  if (!response.ok) throw new Error(`${request.method ?? 'GET'} ${request.path}: ${response.status} ${(await response.text()).slice(0, 500)}`);
  return response;
}

interface Side {
  checkout: Checkout;
  served: Served;
  load: Load;
}

/**
 * Both sides measured `ROUNDS` times after one unrecorded run each, in an order that rotates
 * every round; each round's figures, [this checkout, base].
 */
async function alternate(label: string, sides: [Side, Side], postgres: boolean): Promise<[Figures, Figures][]> {
  const run = (side: Side) => measure(side.checkout.name, side.served.port, side.load, { warmUpSeconds: 0, server: side.served.child, postgres });
  for (const side of sides) await run(side);
  const rounds: [Figures, Figures][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const figures: Figures[] = [];
    for (let turn = 0; turn < sides.length; turn++) {
      const index = (round + turn) % sides.length;
      figures[index] = await run(sides[index]!);
    }
    const [withTrail, base] = figures as [Figures, Figures];
    rounds.push([withTrail, base]);
    const describe = (entry: Figures) =>
      `${entry.target} ${Math.round(entry.requestsPerSecond)}/s, ${Math.round(cpuOf(entry))} µs` +
      (entry.postgresCpuMicrosPerRequest === undefined ? '' : ` (${Math.round(entry.cpuMicrosPerRequest ?? 0)} + PostgreSQL ${Math.round(entry.postgresCpuMicrosPerRequest)})`) +
      `, p99 ${entry.p99} ms` +
      (entry.non2xx + entry.errors > 0 ? `, ${entry.non2xx} non-2xx, ${entry.errors} errors` : '');
    say(`${label} round ${round + 1}: ${describe(withTrail)}; ${describe(base)}`);
  }
  return rounds;
}

/** A figure of both sides, and what its ratio (this checkout over base, the median of the rounds' ratios) must be. */
interface Compared {
  figure: string;
  of: (entry: Figures) => number;
  digits: number;
  target?: { text: string; holds: (ratio: number) => boolean };
}

const REQUESTS_PER_SECOND = (entry: Figures) => entry.requestsPerSecond;
const P99 = (entry: Figures) => entry.p99;

/** The medians of each side's figures and of each round's ratio, as a table, with the targets. */
function compareTable(part: string, database: string, rounds: [Figures, Figures][], compared: Compared[]): void {
  const medianOf = (side: 0 | 1, figure: (entry: Figures) => number) => median(rounds.map((round) => figure(round[side])));
  table(
    compared.map(({ figure, of, digits, target }) => {
      const ratio = median(rounds.map(([withTrail, base]) => of(withTrail) / of(base)));
      const holds = target?.holds(ratio);
      if (target && holds !== undefined) verdicts.push({ part, database, figure: `${figure}, with / base`, value: ratio.toFixed(3), target: target.text, met: met(holds) });
      return {
        figure,
        [THIS.name]: medianOf(0, of).toFixed(digits),
        base: medianOf(1, of).toFixed(digits),
        'with / base (median of rounds)': ratio.toFixed(3),
        target: target?.text ?? '–',
        met: holds === undefined ? '–' : met(holds),
      };
    }),
  );
  const failures = rounds.reduce((sum, [withTrail, base]) => sum + withTrail.non2xx + withTrail.errors + base.non2xx + base.errors, 0);
  if (failures > 0) {
    say(`WARNING: ${failures} non-2xx answers or errors in the measured runs (see the rounds above)`);
    verdicts.push({ part, database, figure: 'non-2xx answers or errors', value: String(failures), target: '0', met: 'NO' });
  }
}

// ---- acl ----

const ACL_CUSTOMER = 'bench';
const ACL_USERS = 50;
const ACL_LOCKS = 20;

interface AclBodyState {
  id: string;
  customer: string;
  users: { user_id: number; pin_hash: string; auth_time: number; sounder: boolean; sounder_delay: number; sounder_duration: number; sounder_volume: number; permissions: number[] }[];
  locks: string[];
  user_data: Record<string, unknown>;
}

/** The ACLs both sides are seeded with, the same ids and contents. */
function aclBodies(): AclBodyState[] {
  const locks = Array.from({ length: ACL_LOCKS }, (_, index) => `LOCK-${String(index).padStart(6, '0')}`);
  return Array.from({ length: ACL_COUNT }, (_, acl) => ({
    id: `00000000-0000-4000-8000-${String(acl).padStart(12, '0')}`,
    customer: ACL_CUSTOMER,
    users: Array.from({ length: ACL_USERS }, (_, user) => ({
      user_id: 100_000 + user,
      pin_hash: randomBytes(16).toString('hex'),
      auth_time: 8,
      sounder: user % 2 === 0,
      sounder_delay: 10,
      sounder_duration: 30,
      sounder_volume: 2,
      permissions: Array.from({ length: ACL_LOCKS }, (_, lock) => ([0, 1, 17] as const)[(acl + user + lock) % 3]!),
    })),
    locks,
    user_data: { site: `shop ${acl}` },
  }));
}

/** The harness's Load names the methods its benchmarks used so far; autocannon sends any, PUT included. */
const PUT = 'PUT' as unknown as 'POST';

/**
 * PUTs of the side's own copy of the ACLs, round-robin, each flipping one permission of the
 * ACL as that side last stored it (0 → 1, else → 0), a different cell each time round.
 */
function aclUpdateLoad(token: string, acls: AclBodyState[]): Load {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  let sent = 0;
  return {
    connections: CONNECTIONS,
    seconds: DURATION_S,
    next: () => {
      const acl = acls[sent % acls.length]!;
      const cell = Math.floor(sent / acls.length) % (ACL_USERS * ACL_LOCKS);
      sent += 1;
      const permissions = acl.users[cell % ACL_USERS]!.permissions;
      const lock = Math.floor(cell / ACL_USERS);
      permissions[lock] = permissions[lock] === 0 ? 1 : 0;
      return { method: PUT, path: `/api/v1/acls/${acl.id}`, headers, body: JSON.stringify(acl) };
    },
  };
}

/** A side of the ACL part: its server, its customer and token, its ACLs created through the API. */
async function aclSide(checkout: Checkout, env: Record<string, string>, run: string): Promise<Side> {
  await cli(checkout, env, 'customer', 'create', ACL_CUSTOMER);
  const { token } = (await cli(checkout, env, 'token', 'issue', '--customer', ACL_CUSTOMER, '--scope', 'acl:read acl:create', '--ttl', '7d')) as { token: string };
  const served = await serve(checkout, env, run);
  const acls = aclBodies();
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < acls.length) {
        const acl = acls[next++]!;
        const response = await fetch(`http://127.0.0.1:${served.port}/api/v1/acls`, { method: 'POST', headers, body: JSON.stringify(acl) });
        if (response.status !== 201) throw new Error(`${checkout.name}: POST /api/v1/acls answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      }
    }),
  );
  const load = aclUpdateLoad(token, acls);
  await probe(served.port, load);
  return { checkout, served, load };
}

async function aclPart(database: BenchDatabase['name']): Promise<void> {
  say(`\n## acl, ${database}: PUT /api/v1/acls/{id}, ${ACL_COUNT} ACLs of ${ACL_USERS} users × ${ACL_LOCKS} locks, one permission flipped per update, ${CONNECTIONS} connections`);
  await withFreshDatabase(database, (withTrailDb) =>
    withFreshDatabase(database, async (baseDb) => {
      const sides: Side[] = [];
      try {
        sides.push(await aclSide(THIS, withTrailDb.env, `acl-${database}`));
        sides.push(await aclSide(BASE!, baseDb.env, `acl-${database}`));
        const rounds = await alternate(`acl ${database}`, sides as [Side, Side], database === 'postgres');
        // An update with its entry at most 1.2 × as costly: as long (1 / throughput), as much CPU, as slow at p99.
        const atMost = { text: '≤ 1.2', holds: (ratio: number) => ratio <= 1.2 };
        compareTable('acl update', database, rounds, [
          { figure: 'updates/s', of: REQUESTS_PER_SECOND, digits: 0, target: { text: '≥ 0.83 (1 / 1.2)', holds: (ratio) => ratio >= 1 / 1.2 } },
          { figure: 'CPU µs per update (server + PostgreSQL)', of: cpuOf, digits: 0, target: atMost },
          { figure: 'p99 ms', of: P99, digits: 1, target: atMost },
        ]);
      } finally {
        await Promise.all(sides.map((side) => stop(side.served.child)));
      }
    }),
  );
}

// ---- dlock ----

const DLOCK_CUSTOMER = 'bench';
const CERTIFICATE = 'bench-ca';

/** POSTs of new serial numbers (as bench/dlock.ts sends them). */
function enrolmentLoad(apiKey: string): Load {
  const run = randomBytes(4).toString('hex');
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/json', 'accept-charset': 'utf-8' };
  let sent = 0;
  return {
    connections: CONNECTIONS,
    seconds: DURATION_S,
    next: () => {
      const body = JSON.stringify({ serial_no: `LOCK-${run}-${sent++}`, type: 'padlock', certificate: CERTIFICATE, enrolment_code: randomBytes(16).toString('hex'), base64: false });
      return { method: 'POST', path: '/v1/dlock', headers, body };
    },
  };
}

async function dlockSide(checkout: Checkout, env: Record<string, string>, run: string, workers: number | undefined): Promise<Side> {
  await cli(checkout, env, 'customer', 'create', DLOCK_CUSTOMER);
  await cli(checkout, env, 'cert', 'create', '--customer', DLOCK_CUSTOMER, '--name', CERTIFICATE);
  const { key } = (await cli(checkout, env, 'apikey', 'create', '--customer', DLOCK_CUSTOMER)) as { key: string };
  const served = await serve(checkout, env, run, workers);
  const load = enrolmentLoad(key);
  await probe(served.port, load);
  return { checkout, served, load };
}

async function dlockPart(database: BenchDatabase['name'], workers: number | undefined): Promise<void> {
  const processes = workers === undefined ? 'one process' : `serve --workers ${workers}`;
  say(`\n## dlock, ${database}, ${processes}: POST /v1/dlock of new serial numbers, ${CONNECTIONS} connections`);
  await withFreshDatabase(database, (withTrailDb) =>
    withFreshDatabase(database, async (baseDb) => {
      const sides: Side[] = [];
      try {
        const run = `dlock-${database}${workers === undefined ? '' : `-workers-${workers}`}`;
        sides.push(await dlockSide(THIS, withTrailDb.env, run, workers));
        sides.push(await dlockSide(BASE!, baseDb.env, run, workers));
        const rounds = await alternate(`dlock ${database} ${processes}`, sides as [Side, Side], database === 'postgres');
        compareTable(`dlock enrolment, ${processes}`, database, rounds, [
          { figure: 'enrolments/s', of: REQUESTS_PER_SECOND, digits: 0, target: { text: '≥ 0.8', holds: (ratio) => ratio >= 0.8 } },
          { figure: 'CPU µs per enrolment (server + PostgreSQL)', of: cpuOf, digits: 0 },
          { figure: 'p99 ms', of: P99, digits: 1 },
        ]);
      } finally {
        await Promise.all(sides.map((side) => stop(side.served.child)));
      }
    }),
  );
}

// ---- the trail of a million entries: verify and search ----

/** The ACL ids the seeded trail's ACL entries name, and the search asks for. */
const entityId = (index: number) => `00000000-0000-4000-9000-${String(index).padStart(12, '0')}`;
const ENTRIES_PER_CALL = 100;
const ENTRIES_PER_TRANSACTION = 5_000;
/** An entry every 30 s: a year of changes at 1 M. */
const ENTRY_SPACING_MS = 30_000;
const USER_AGENTS = ['Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0', 'keyfleet-sync/2.3.1 (+https://example.com)', 'python-requests/2.32.3'];

/** Who made the changes of one call: people through the console (mostly), a sync token, DLock API keys. */
function sourceOf(call: number): ChangeSource {
  const slot = call % 10;
  const requestId = `req-${call.toString(36)}`;
  const ip = `10.${(call >> 16) & 255}.${(call >> 8) & 255}.${call & 255}`;
  if (slot < 7) return { actor: { kind: 'person', id: String(1000 + (call % 200)), name: `Person ${call % 200}` }, requestId, ip, userAgent: USER_AGENTS[0]! };
  if (slot === 7) return { actor: { kind: 'token', id: `6f1c2a9e-0000-4000-8000-${String(call % 20).padStart(12, '0')}`, name: 'acl-sync' }, requestId, ip, userAgent: USER_AGENTS[1]! };
  return { actor: { kind: 'api_key', id: String(call % 50), name: `dlock-key-${call % 50}` }, requestId, ip, userAgent: USER_AGENTS[2]! };
}

/** The change of entry `index` made through a source of `kind`, shaped as the services record them. */
function changeOf(index: number, kind: ChangeSource['actor']['kind']): Change {
  if (kind === 'api_key') {
    const serial = `LOCK-${String(index).padStart(9, '0')}`;
    return {
      action: 'dlock.enrolled',
      customer: `customer-${index % 50}`,
      entity: { type: 'dlock', id: serial },
      after: {
        type: 'padlock',
        issuer: `customer-${index % 50}-ca`,
        valid: '2025-01-01T00:00:00.000Z',
        expires: '2035-01-01T00:00:00.000Z',
        data: { serial_no: serial, type: 'padlock' },
        fingerprint: randomBytes(32).toString('hex'),
      },
    };
  }
  if (index % 5 === 4) {
    return {
      action: 'okm.configured',
      customer: `customer-${index % 50}`,
      entity: { type: 'okm', id: `OKM-${String(index % 5_000).padStart(6, '0')}` },
      before: { polling_interval: 300, cache_mode: 'enabled' },
      after: { polling_interval: 600, cache_mode: 'disabled' },
    };
  }
  // Spread over the ACLs so that each has entries all along the trail.
  const acl = (index * 7_919) % ENTITY_COUNT;
  const user = String(100_000 + (index % ACL_USERS));
  const lock = `LOCK-${String((index * 31) % ACL_LOCKS).padStart(6, '0')}`;
  return {
    action: 'acl.updated',
    customer: `customer-${acl % 50}`,
    entity: { type: 'acl', id: entityId(acl) },
    before: { users: { [user]: { access: { [lock]: 0 } } } },
    after: { users: { [user]: { access: { [lock]: 1 } } } },
  };
}

/**
 * Appends `ENTRY_COUNT` entries through recordChanges (the chain as the services write it, a
 * transaction per 5 000), signs every checkpoint due (each 1 000th entry and the head), and
 * moves the audit.entry shipping cursor to the head, as a running deployment has shipped its
 * old entries (else the server's shipping step would read the whole trail during the search).
 */
async function seedTrail(env: Record<string, string>): Promise<void> {
  const started = performance.now();
  await withDb(env, async (db, settings) => {
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    await ensureActiveSigningKey(db, keyRing);
    const firstTime = Date.now() - ENTRY_COUNT * ENTRY_SPACING_MS;
    for (let start = 0; start < ENTRY_COUNT; start += ENTRIES_PER_TRANSACTION) {
      await db.transaction().execute(async (trx) => {
        for (let first = start; first < Math.min(start + ENTRIES_PER_TRANSACTION, ENTRY_COUNT); first += ENTRIES_PER_CALL) {
          const source = sourceOf(first / ENTRIES_PER_CALL);
          const changes = Array.from({ length: Math.min(ENTRIES_PER_CALL, ENTRY_COUNT - first) }, (_, offset) => changeOf(first + offset, source.actor.kind));
          await recordChanges(trx, source, changes, firstTime + first * ENTRY_SPACING_MS);
        }
      });
      // As the servers' chainer would, right after each commit.
      await chainAllPendingEntries(db);
      const done = Math.min(start + ENTRIES_PER_TRANSACTION, ENTRY_COUNT);
      if (done % 100_000 === 0 || done === ENTRY_COUNT) console.log(`  ${done} entries, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
    const signingKey = () => loadActiveSigningKey(db, keyRing);
    let checkpoints = 0;
    for (let signed = -1; signed !== 0; checkpoints += signed) signed = Math.max(0, await signDueCheckpoints(db, signingKey));
    await db.updateTable('audit_event_cursor').set({ seq: sql<number>`(select seq from audit_chain_head where id = 1)` }).where('id', '=', 1).execute();
    // PostgreSQL: as autovacuum would have done by the time a trail is this long (statistics, a
    // visibility map). SQLite: the file as the writes left it, as keyfleet never analyzes it.
    if (settings.databaseUrl !== undefined) await sql`vacuum analyze`.execute(db);
    say(`seeded ${ENTRY_COUNT} entries and ${checkpoints} signed checkpoints in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  });
}

/** The trail's targets are set at 1 M entries: a smaller trail's figures are shown, not judged. */
const judgedAtFullSize = (holds: boolean) => (ENTRY_COUNT >= 1_000_000 ? met(holds) : '– (judged at 1 M)');

/** `keyfleet audit verify` (compiled) from spawn to exit, `VERIFY_RUNS` times. */
async function verifyPart(database: BenchDatabase, expected: number): Promise<void> {
  say(`\n## verify, ${database.name}: keyfleet audit verify over ${ENTRY_COUNT} seeded entries`);
  const seconds: number[] = [];
  for (let run = 0; run < VERIFY_RUNS; run++) {
    const started = performance.now();
    const result = (await cli(THIS, database.env, 'audit', 'verify')) as { intact: boolean; entries: number; checkpoints: number; lastCheckpoint: number | null };
    seconds.push((performance.now() - started) / 1000);
    if (!result.intact || result.entries !== expected) throw new Error(`audit verify: ${JSON.stringify(result)} (expected ${expected} entries, intact)`);
    say(`verify run ${run + 1}: intact, ${result.entries} entries, ${result.checkpoints} signed checkpoints (last at ${result.lastCheckpoint}), ${seconds.at(-1)!.toFixed(1)} s`);
  }
  const wall = median(seconds);
  const judged = judgedAtFullSize(wall <= 30);
  table([
    {
      figure: 'keyfleet audit verify, wall time (process start to exit)',
      median: `${wall.toFixed(1)} s`,
      runs: seconds.map((value) => value.toFixed(1)).join(' / '),
      'entries/s': Math.round(expected / wall),
      target: '≤ 30 s at 1 M',
      met: judged,
    },
  ]);
  verdicts.push({ part: 'audit verify', database: database.name, figure: `${expected} entries, wall time`, value: `${wall.toFixed(1)} s`, target: '≤ 30 s at 1 M', met: judged });
}

/** Searches of random ACLs' entries, on a server over the seeded trail, `ROUNDS` times. */
async function searchPart(database: BenchDatabase, token: string): Promise<void> {
  say(`\n## search, ${database.name}: GET /api/v1/audit-log?entity_type=acl&entity_id=<one of ${ENTITY_COUNT}> (first page), ${ENTRY_COUNT} entries, ${SEARCH_CONNECTIONS} connections`);
  const served = await serve(THIS, database.env, `search-${database.name}`);
  const headers = { authorization: `Bearer ${token}` };
  const load: Load = {
    connections: SEARCH_CONNECTIONS,
    seconds: DURATION_S,
    next: () => ({ path: `/api/v1/audit-log?entity_type=acl&entity_id=${entityId(Math.floor(Math.random() * ENTITY_COUNT))}`, headers }),
  };
  try {
    // The first seeded entry names the first ACL: a search of it finds entries at any size.
    const sample = (await (await probe(served.port, { ...load, next: () => ({ path: `/api/v1/audit-log?entity_type=acl&entity_id=${entityId(0)}`, headers }) })).json()) as { data: unknown[] };
    if (sample.data.length === 0) throw new Error(`search: no entry of ACL ${entityId(0)}, which the first seeded entry names`);
    say(`a page holds ${sample.data.length} entries`);
    const postgres = database.name === 'postgres';
    await measure('search', served.port, load, { warmUpSeconds: 0, server: served.child, postgres });
    const rounds: Figures[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const figures = await measure('search', served.port, load, { warmUpSeconds: 0, server: served.child, postgres });
      rounds.push(figures);
      say(
        `search ${database.name} round ${round + 1}: ${Math.round(figures.requestsPerSecond)}/s, p50 ${figures.p50} ms, p99 ${figures.p99} ms, ${Math.round(cpuOf(figures))} µs CPU/request` +
          (figures.non2xx + figures.errors > 0 ? `, ${figures.non2xx} non-2xx, ${figures.errors} errors` : ''),
      );
    }
    const p99 = median(rounds.map((figures) => figures.p99));
    const failures = rounds.reduce((sum, figures) => sum + figures.non2xx + figures.errors, 0);
    const judged = failures > 0 ? 'NO' : judgedAtFullSize(p99 < 20);
    table([
      {
        figure: 'search by entity',
        'requests/s': Math.round(median(rounds.map((figures) => figures.requestsPerSecond))),
        'p50 ms': median(rounds.map((figures) => figures.p50)).toFixed(1),
        'p99 ms (median of rounds)': p99.toFixed(1),
        'p99 ms per round': rounds.map((figures) => figures.p99).join(' / '),
        'CPU µs/request (server + PostgreSQL)': Math.round(median(rounds.map(cpuOf))),
        'non-2xx + errors': failures,
        target: '< 20 ms at 1 M',
        met: judged,
      },
    ]);
    verdicts.push({ part: 'audit search', database: database.name, figure: `by entity at ${ENTRY_COUNT} entries, p99`, value: `${p99.toFixed(1)} ms`, target: '< 20 ms at 1 M', met: judged });
  } finally {
    await stop(served.child);
  }
}

async function trailParts(database: BenchDatabase): Promise<void> {
  say(`\n## the trail of ${ENTRY_COUNT} entries, ${database.name}`);
  // An operator token (deployment-wide, so admin), issued first: its own entry (token.issued) opens
  // the chain and the seeded ones follow.
  const { token } = (await cli(THIS, database.env, 'token', 'issue', '--scope', 'audit:read admin', '--ttl', '7d')) as { token: string };
  const headBefore = await withDb(database.env, async (db) => Number((await db.selectFrom('audit_chain_head').select('seq').executeTakeFirstOrThrow()).seq));
  await seedTrail(database.env);
  if (selectedParts.has('verify')) await verifyPart(database, headBefore + ENTRY_COUNT);
  if (selectedParts.has('search')) await searchPart(database, token);
}

// ---- main ----

async function main(): Promise<void> {
  const started = Date.now();
  const databases = options.sqlite === options.postgres ? 'both databases' : options.sqlite ? 'sqlite' : 'postgres';
  say(`# bench:audit, ${new Date().toISOString()}`);
  say(
    `${THIS.name}: ${THIS.dir} at ${gitHead(THIS.dir)}${gitDirty(THIS.dir)}` +
      (BASE && comparesWithBase ? `; base: ${BASE.dir} at ${gitHead(BASE.dir)}${gitDirty(BASE.dir)}` : '') +
      `; Node ${process.version}, ${os.cpus().length} CPUs; ${databases}; parts ${[...selectedParts].join(', ')}; ${ROUNDS} rounds of ${DURATION_S} s`,
  );
  buildServer(THIS.dir);
  if (comparesWithBase) buildServer(BASE!.dir);

  await forEachBenchDatabase({ sqlite: options.sqlite ?? false, postgres: options.postgres ?? false }, async (database) => {
    if (selectedParts.has('acl')) await aclPart(database.name);
    if (selectedParts.has('dlock')) {
      await dlockPart(database.name, undefined);
      // Several processes serve one port on PostgreSQL only (SQLite takes one writer at a time).
      if (database.name === 'postgres') await dlockPart(database.name, WORKERS);
    }
    if (selectedParts.has('verify') || selectedParts.has('search')) await trailParts(database);
  });

  say(`\n## summary`);
  table(verdicts.map((verdict) => ({ ...verdict })));
  say(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (options.save) {
    const parts = selectedParts.size === PARTS.length ? '' : `-${[...selectedParts].join('-')}`;
    const file = path.join(REPO_ROOT, 'bench/results', `audit-${databases === 'both databases' ? 'both' : databases}${parts}.txt`);
    fs.writeFileSync(file, `${output.join('\n')}\n`);
    console.log(`written to ${path.relative(REPO_ROOT, file)}`);
  }
}

await main();
