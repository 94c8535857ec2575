/**
 * What a steady poll costs V8's garbage collector, and what it allocates: keyfleet (compiled,
 * as `npm start` runs it, default log level) on a seeded fleet under the bench's poll load,
 * with V8 tracing every collection (`--trace-gc-nvp`) and, for a few seconds of the load, V8's
 * sampling heap profiler counting every allocation, also of objects collected since.
 *
 *   npm run bench:poll-gc -- [--sqlite] [--postgres] [--okms 100000] [--duration 10] [--connections 100] [--sampling 5] [--top 25] [--survivors | --promoted]
 *
 * `--survivors` samples only the objects that no collection has freed when the sampling ends,
 * rather than every allocation: where what the scavenges find alive was allocated (objects
 * still in use, and promoted ones that died since and wait for the old generation's next
 * collection).
 *
 * `--promoted` samples only the objects that no scavenge has freed: those that the young
 * generation's collections copied until they were promoted (and the old generation's
 * collection freed, or has not yet), and those still young and alive when the sampling ends.
 * Against `--survivors`, it names where the objects were allocated that a scavenge finds
 * alive and that then die in the old generation.
 *
 * Prints per database: CPU per poll; the young generation's collections (scavenges): polls
 * between two, the main thread's pause and the helper threads' work a poll, and the bytes each
 * found alive (objects still reachable, or held by old objects that died since): copied within
 * the young generation (V8's `new_space_survived`, those alive for the first time) and promoted
 * to the old one (alive at the scavenge before too); the old generation's collections; the
 * bytes allocated a poll, and the functions that allocated most.
 * A scavenge copies what survives, so its cost follows the bytes live in the young generation
 * when it runs, times how often it runs (the bytes allocated a poll).
 *
 * The allocation figures divide the bytes sampled by the polls answered at the load's mean
 * rate over the sampling seconds: an estimate to a few per cent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { requestPaths, seedFleet } from './fleet.ts';
import { BENCH_OPTIONS, buildServer, forEachBenchDatabase, freePort, measure, pathsLoad, startKeyfleet, stop, type BenchDatabase } from './harness.ts';

const { values: options } = parseArgs({
  options: {
    ...BENCH_OPTIONS,
    okms: { type: 'string', default: '100000' },
    sampling: { type: 'string', default: '5' },
    top: { type: 'string', default: '25' },
    survivors: { type: 'boolean', default: false },
    promoted: { type: 'boolean', default: false },
  },
});
const OKM_COUNT = Number(options.okms);
const SAMPLING_SECONDS = Number(options.sampling);
/** Bytes between two allocation samples: small enough that a poll's few kilobytes are sampled many times a second. */
const SAMPLING_INTERVAL_BYTES = 4096;

interface Collection {
  /** `gc=s`, a scavenge of the young generation; else (`gc=mc`, `gc=mmc`) a collection of the old one. */
  scavenge: boolean;
  /** The line's numeric name=value pairs: `pause`, `new_space_survived`, `promoted`, … */
  figures: Map<string, number>;
}

/** The collections of `--trace-gc-nvp`'s lines in `text` (other lines, the server's log, skipped). */
function collectionsIn(text: string): Collection[] {
  return text
    .split('\n')
    .filter((line) => / gc=\w+ /.test(line))
    .map((line) => ({
      scavenge: / gc=s /.test(line),
      figures: new Map([...line.matchAll(/([\w.]+)=([\d.]+)/g)].map(([, name, value]) => [name!, Number(value)])),
    }));
}

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: ProfileNode[];
}

/** Bytes allocated by each function of a sampling heap profile (a built-in by its caller's name). */
function allocationsByFunction(head: ProfileNode): Map<string, number> {
  const bytes = new Map<string, number>();
  const visit = (node: ProfileNode, caller: string) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || '(anonymous)'} ${url.split('/').pop()}:${lineNumber + 1}`;
    const key = url === '' ? `${functionName || '(anonymous)'} in ${caller}` : name;
    if (node.selfSize > 0) bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
    for (const child of node.children ?? []) visit(child, name);
  };
  visit(head, '');
  return bytes;
}

/** V8's sampling heap profiler over the inspector protocol of the process listening on `port`, for `seconds`. */
async function sampleAllocations(port: number, seconds: number): Promise<ProfileNode> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const socket = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', reject, { once: true });
  });
  const answers = new Map<number, (result: unknown) => void>();
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) answers.get(message.id)?.(message.result);
  });
  let lastId = 0;
  const call = <Result>(method: string, params: object = {}) =>
    new Promise<Result>((resolve) => {
      const id = ++lastId;
      answers.set(id, resolve as (result: unknown) => void);
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    await call('HeapProfiler.enable');
    await call('HeapProfiler.startSampling', {
      samplingInterval: SAMPLING_INTERVAL_BYTES,
      includeObjectsCollectedByMajorGC: !options.survivors,
      includeObjectsCollectedByMinorGC: !options.survivors && !options.promoted,
    });
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    return (await call<{ profile: { head: ProfileNode } }>('HeapProfiler.stopSampling')).profile.head;
  } finally {
    socket.close();
  }
}

const sum = (collections: Collection[], name: string) => collections.reduce((total, collection) => total + (collection.figures.get(name) ?? 0), 0);

async function run(database: BenchDatabase): Promise<void> {
  await seedFleet(database.env, OKM_COUNT);
  const load = pathsLoad(requestPaths('/api/v1/config', OKM_COUNT), Number(options.connections), Number(options.duration));
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-poll-gc-'));
  const traceFile = path.join(directory, 'stdout');
  const stdout = fs.openSync(traceFile, 'w');
  const inspectorPort = await freePort();
  const server = await startKeyfleet(database.env, { built: true, stdout, nodeArguments: ['--trace-gc-nvp', `--inspect=127.0.0.1:${inspectorPort}`] });
  try {
    const postgres = database.name === 'postgres';
    await measure('warm-up', server.port, load, { warmUpSeconds: 0, server: server.child, postgres });
    const tracedFrom = fs.statSync(traceFile).size;
    const measuring = measure('keyfleet', server.port, load, { warmUpSeconds: 0, server: server.child, postgres });
    // The sampling starts once the load is steady and ends before it does.
    const sampled = new Promise((resolve) => setTimeout(resolve, 2000)).then(() => sampleAllocations(inspectorPort, SAMPLING_SECONDS));
    const [figures, head] = await Promise.all([measuring, sampled]);
    const traced = fs.readFileSync(traceFile, 'utf8').slice(tracedFrom);
    const polls = figures.requestsPerSecond * Number(options.duration);
    const collections = collectionsIn(traced);
    const scavenges = collections.filter((collection) => collection.scavenge);
    const oldGeneration = collections.filter((collection) => !collection.scavenge);
    const microsPerPoll = (milliseconds: number) => ((milliseconds * 1000) / polls).toFixed(2);
    console.log(
      `${database.name}: ${Math.round(figures.cpuMicrosPerRequest!)} µs a poll${postgres ? ` + PostgreSQL ${Math.round(figures.postgresCpuMicrosPerRequest!)} µs` : ''}, ` +
        `${Math.round(figures.requestsPerSecond)} polls/s, p99 ${figures.p99} ms, ${OKM_COUNT} OKMs, ${options.connections} connections`,
    );
    console.log(
      `  scavenges: ${scavenges.length}, one every ${Math.round(polls / Math.max(1, scavenges.length))} polls; a poll: ${microsPerPoll(sum(scavenges, 'pause'))} µs paused, ` +
        `${microsPerPoll(sum(scavenges, 'background.scavenge.parallel'))} µs on helper threads; each: ${(sum(scavenges, 'new_space_survived') / Math.max(1, scavenges.length) / 1e6).toFixed(2)} MB copied, ` +
        `${(sum(scavenges, 'promoted') / Math.max(1, scavenges.length) / 1e6).toFixed(2)} MB promoted`,
    );
    console.log(`  old generation: ${oldGeneration.length} collections, ${microsPerPoll(sum(oldGeneration, 'pause'))} µs paused a poll`);
    const allocations = allocationsByFunction(head);
    const sampledPolls = figures.requestsPerSecond * SAMPLING_SECONDS;
    const total = [...allocations.values()].reduce((all, bytes) => all + bytes, 0);
    const what = options.survivors ? 'allocated and not freed when the sampling ended' : options.promoted ? 'allocated and not freed by a scavenge' : 'allocated';
    console.log(`  ${what}: ${Math.round(total / sampledPolls)} bytes a poll (sampled over ${SAMPLING_SECONDS} s); by function, bytes a poll:`);
    for (const [name, bytes] of [...allocations].sort((a, b) => b[1] - a[1]).slice(0, Number(options.top))) {
      console.log(`  ${String(Math.round(bytes / sampledPolls)).padStart(8)}  ${name}`);
    }
    console.log();
  } finally {
    await stop(server.child);
    fs.closeSync(stdout);
    fs.rmSync(directory, { recursive: true, force: true });
  }
}

buildServer();
await forEachBenchDatabase({ sqlite: options.sqlite, postgres: options.postgres }, run);
