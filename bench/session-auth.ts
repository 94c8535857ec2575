/**
 * What a request authenticated by a session cookie costs beside the same request with a
 * bearer token (contract §17: a session check must cost no measurable time). One `keyfleet serve`
 * (compiled, default settings) per database; a person bound to the `viewer` role of customer
 * acme with a session, and a token of acme with the same scopes. GET /api/v1/okms?limit=1 of
 * acme (a small page: the credential's share is what shows). Rounds alternate token and
 * cookie, in an order that rotates, and a bare node:http server answers the same requests in
 * each round.
 *
 *   npm run bench:session-auth -- [--sqlite] [--postgres] [--rounds 6] [--duration 8] [--connections 20]
 *
 * Prints each round's CPU per request (server process, all threads, from /proc; with the
 * host's PostgreSQL processes added on PostgreSQL), then the medians and the median of the
 * per-round ratio cookie/token.
 */
import { parseArgs } from 'node:util';
import { startSession, upsertPerson } from '../src/auth/sessions.ts';
import { createKeyRing } from '../src/key-ring.ts';
import { loadMasterKey } from '../src/secrets/master-key.ts';
import { BENCH_OPTIONS, buildServer, forEachBenchDatabase, keyfleetCli, measure, median, startBare, startKeyfleet, stop, withDb, type Figures, type Load } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    sqlite: BENCH_OPTIONS.sqlite,
    postgres: BENCH_OPTIONS.postgres,
    rounds: { type: 'string', default: '6' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '20' },
  },
});
const ROUNDS = Number(options.rounds);
const SECONDS = Number(options.duration);
const CONNECTIONS = Number(options.connections);
const PATH = '/api/v1/okms?customer=acme&limit=1';

const load = (headers: Record<string, string>): Load => ({ connections: CONNECTIONS, seconds: SECONDS, next: () => ({ path: PATH, headers }) });
const cpuOf = (figures: Figures) => (figures.cpuMicrosPerRequest ?? 0) + (figures.postgresCpuMicrosPerRequest ?? 0);

buildServer();
await forEachBenchDatabase({ sqlite: options.sqlite ?? false, postgres: options.postgres ?? false }, async (database) => {
  // Sessions are not refreshed during the run: no provider is set up, and a due refresh would end them.
  const env = { ...database.env, SESSION_REFRESH: '24h' };
  await keyfleetCli(env, 'customer', 'create', 'acme');
  await keyfleetCli(env, 'role', 'bind', 'viewer', '--email', 'bench@example.com', '--customer', 'acme');
  const { token } = (await keyfleetCli(env, 'token', 'issue', '--customer', 'acme', '--scope', 'okm:read acl:read lock:read')) as { token: string };
  const secret = await withDb(env, async (db, settings) => {
    const keyRing = createKeyRing(db, loadMasterKey(settings));
    await keyRing.refresh();
    const identity = { issuer: 'https://idp.example.com', subject: 'bench', email: 'bench@example.com', name: 'Bench', groups: [], refreshToken: undefined };
    return (await startSession(db, keyRing, settings, await upsertPerson(db, identity, Date.now()), identity, Date.now())).secret;
  });
  const keyfleet = await startKeyfleet(env, { built: true });
  const bare = await startBare('{"message":"Resource fetched successfully","data":[]}');
  const postgres = database.name === 'postgres';
  const runs: Record<'token' | 'cookie' | 'bare', number[]> = { token: [], cookie: [], bare: [] };
  try {
    const targets = {
      token: () => measure('token', keyfleet.port, load({ authorization: `Bearer ${token}` }), { server: keyfleet.child, postgres }),
      cookie: () => measure('cookie', keyfleet.port, load({ cookie: `keyfleet_session=${secret}` }), { server: keyfleet.child, postgres }),
      bare: () => measure('bare', bare.port, load({}), { server: bare.child }),
    };
    const order = ['token', 'cookie', 'bare'] as const;
    for (let round = 0; round < ROUNDS; round++) {
      const line: string[] = [];
      for (let turn = 0; turn < order.length; turn++) {
        const name = order[(round + turn) % order.length]!;
        const figures = await targets[name]();
        if (figures.non2xx > 0 || figures.errors > 0) throw new Error(`${name}: ${figures.non2xx} non-2xx, ${figures.errors} errors`);
        runs[name].push(cpuOf(figures));
        line.push(`${name} ${cpuOf(figures).toFixed(0)} µs (p99 ${figures.p99} ms, ${Math.round(figures.requestsPerSecond)}/s)`);
      }
      console.log(`${database.name} round ${round + 1}: ${line.join(', ')}`);
    }
  } finally {
    await stop(keyfleet.child);
    await stop(bare.child);
  }
  const ratios = runs.cookie.map((cookie, index) => cookie / runs.token[index]!);
  console.log(
    `${database.name}: median CPU per request token ${median(runs.token).toFixed(0)} µs, cookie ${median(runs.cookie).toFixed(0)} µs, bare ${median(runs.bare).toFixed(0)} µs; ` +
      `cookie/token per round ${ratios.map((ratio) => ratio.toFixed(3)).join(' ')}, median ${median(ratios).toFixed(3)}`,
  );
});
