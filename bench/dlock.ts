/**
 * DLock benchmark: enrolments per second (POST /v1/dlock, each with a new serial number) and
 * key certificate fetches (GET /v1/dlock/{serial}, half of them ?base64=true) against a bare
 * node:http server that answers every request with a real GET response body, on SQLite and
 * PostgreSQL. GET runs --rounds times, alternating with the bare server; the figure is the
 * median of the rounds' ratios.
 *
 *   npm run bench:dlock -- [--sqlite] [--postgres] [--rounds 3] [--duration 10]
 *                          [--connections 100] [--cpu-prof DIR]
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  BENCH_OPTIONS,
  WARM_UP_S,
  forEachBenchDatabase,
  keyfleetCli,
  measure,
  median,
  printFigures,
  startBare,
  startKeyfleet,
  stop,
  type Figures,
  type Load,
} from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    rounds: { type: 'string', default: '3' },
    'cpu-prof': { type: 'string' },
  },
});
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);
const ROUNDS = Number(options.rounds);
const CERTIFICATE = 'bench-ca';

/** POSTs of new serial numbers; `enrolled` collects every serial sent. */
function enrolmentLoad(apiKey: string, enrolled: string[]): Load {
  const run = randomBytes(4).toString('hex');
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/json', 'accept-charset': 'utf-8' };
  return {
    connections: CONNECTIONS,
    seconds: DURATION_S,
    next: () => {
      const serial = `LOCK-${run}-${enrolled.length}`;
      enrolled.push(serial);
      const body = JSON.stringify({ serial_no: serial, type: 'padlock', certificate: CERTIFICATE, enrolment_code: randomBytes(16).toString('hex'), base64: false });
      return { method: 'POST', path: '/v1/dlock', headers, body };
    },
  };
}

/** GETs of random enrolled locks, every other one in the base64 form. */
function fetchLoad(apiKey: string, enrolled: string[]): Load {
  const headers = { authorization: `Bearer ${apiKey}`, accept: 'application/json' };
  let count = 0;
  return {
    connections: CONNECTIONS,
    seconds: DURATION_S,
    next: () => {
      const serial = enrolled[Math.floor(Math.random() * enrolled.length)]!;
      return { path: `/v1/dlock/${serial}${count++ % 2 === 0 ? '?base64=true' : ''}`, headers };
    },
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const figures: Figures[] = [];
  // Each GET is compared with the mean of the bare runs around it.
  const bareFor = new Map<string, Figures>();
  const ratios: { database: string; ratio: number }[] = [];

  await forEachBenchDatabase(options, async ({ name, env }) => {
    const { port, child } = await startKeyfleet(env, { cpuProfileDir: options['cpu-prof'] && path.join(options['cpu-prof'], name) });
    try {
      await keyfleetCli(env, 'customer', 'create', 'bench');
      await keyfleetCli(env, 'cert', 'create', '--customer', 'bench', '--name', CERTIFICATE);
      const { key } = (await keyfleetCli(env, 'apikey', 'create', '--customer', 'bench')) as { key: string };

      const enrolled: string[] = [];
      figures.push(await measure(`keyfleet ${name} POST /v1/dlock (enrolments)`, port, enrolmentLoad(key, enrolled), { server: child }));
      // Only serials whose enrolment was answered 200 are fetched; a failed one would show as non-2xx below.
      const sample = await fetch(`http://127.0.0.1:${port}/v1/dlock/${enrolled[0]}`, { headers: { authorization: `Bearer ${key}` } });
      if (!sample.ok) throw new Error(`GET of an enrolled lock answered ${sample.status}`);
      const fetchable = enrolled.slice(0, Math.floor(enrolled.length * 0.9));

      // The ceiling: the same GET requests answered with a real key certificate body and no
      // work. Bare and keyfleet runs alternate, each keyfleet run compared with the mean of the
      // bare runs just before and after it, so that both see the same machine.
      const bare = await startBare(await sample.text());
      try {
        let bareBefore = await measure(`bare node:http, ${name} GET (same body)`, bare.port, fetchLoad(key, fetchable), { server: bare.child });
        figures.push(bareBefore);
        for (let round = 1; round <= ROUNDS; round++) {
          const get = await measure(`keyfleet ${name} GET /v1/dlock/{serial}, round ${round}`, port, fetchLoad(key, fetchable), { server: child });
          const bareAfter = await measure(`bare node:http, ${name} GET (same body)`, bare.port, fetchLoad(key, fetchable), { server: bare.child });
          figures.push(get, bareAfter);
          bareFor.set(get.target, { ...bareBefore, requestsPerSecond: (bareBefore.requestsPerSecond + bareAfter.requestsPerSecond) / 2 });
          ratios.push({ database: name, ratio: get.requestsPerSecond / bareFor.get(get.target)!.requestsPerSecond });
          bareBefore = bareAfter;
        }
      } finally {
        await stop(bare.child);
      }
    } finally {
      await stop(child);
    }
  });

  console.log(`\n${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARM_UP_S} s warm-up, ${os.cpus().length} CPUs`);
  printFigures(figures, (entry) => bareFor.get(entry.target));
  for (const database of new Set(ratios.map((entry) => entry.database))) {
    const values = ratios.filter((entry) => entry.database === database).map((entry) => entry.ratio);
    console.log(`${database}: GET ratio to bare, median of ${values.length} rounds ${median(values).toFixed(2)} (${values.map((value) => value.toFixed(2)).join(' ')})`);
  }
  console.log(`total ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

await main();
