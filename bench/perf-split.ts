/**
 * Where each server's CPU goes, per request, from the `perf record` files that
 * `bench:poll-floor -- --perf DIR` writes: by thread, and on the event loop by what the sampled
 * instruction was (JavaScript compiled by V8, V8's builtins, the rest of node and V8, SQLite,
 * the C library, the kernel by the system call it serves). Side by side, so that keyfleet's
 * CPU above the floor is seen by kind.
 *
 *   npx tsx bench/perf-split.ts DIR [--functions N] [--between A,B]
 *
 * `--functions N` lists, after the kinds, the N event-loop functions (the sampled frame's own
 * time) whose µs a request differ most between the last server and the first (keyfleet's and
 * bare's in a bench:poll-floor directory), or between the two named by `--between A,B` (a
 * recording's name or its end: `--between floor,keyfleet`). A timed view by function:
 * callgrind counts instructions, and a lookup that misses the cache costs far more time than
 * its instructions say (a Map of 100 000 serial numbers, say).
 *
 * Needs Linux `perf`. A sample is 1/999 s of CPU; µs per request = samples / 999 / requests.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const SAMPLES_PER_SECOND = 999;
const { values: options, positionals } = parseArgs({ allowPositionals: true, options: { functions: { type: 'string' }, between: { type: 'string' } } });
const dir = positionals[0];
if (!dir) throw new Error('usage: npx tsx bench/perf-split.ts DIR [--functions N] [--between A,B] (DIR: the --perf directory of bench:poll-floor)');

/** What a main-thread sample was doing, from its innermost frame (and, in the kernel, the system call below it). */
function kindOf(frames: readonly string[]): string {
  const [leaf = '', ...callers] = frames;
  const [address = '', symbol = ''] = leaf.split(/\s+(.*)/);
  if (address.startsWith('ffffffff')) {
    const stack = callers.join('\n');
    if (/tcp_sendmsg|sock_write/.test(stack)) return 'kernel: socket writes';
    if (/tcp_recvmsg|sock_read/.test(stack)) return 'kernel: socket reads';
    if (/pwrite|vfs_write/.test(stack)) return 'kernel: file writes';
    if (/pread|vfs_read/.test(stack)) return 'kernel: file reads';
    if (/epoll/.test(stack)) return 'kernel: epoll';
    return 'kernel: other';
  }
  if (symbol.includes('better_sqlite3') || symbol.includes('linux-x64.node')) return 'SQLite and its driver';
  if (symbol.includes('JS:') || symbol.includes('[JIT]')) return 'JavaScript (compiled)';
  if (symbol.includes('Builtins_')) return 'V8 builtins';
  if (/Heap|Scaveng|Mark|Sweep|GCTracer|Evacuat|RememberedSet|SlotSet/.test(symbol)) return 'V8 garbage collector';
  if (symbol.includes('libc')) return 'C library';
  if (symbol.includes('llhttp')) return 'HTTP parser';
  return 'node and V8, other';
}

/** The function of a sampled frame, without its address, its module and V8's tier mark (`JS:*'f` and `JS:~f` are one function). */
const functionOf = (frame: string) =>
  frame
    .replace(/^\S+\s+/, '')
    .replace(/\s+\([^()]*\)$/, '')
    .replace(/\+0x[0-9a-f]+$/, '')
    .replace(/^JS:[*~^+]?'?/, 'JS:');

interface Split {
  /** µs a request of each thread and, on the main thread, of each kind. */
  kinds: Map<string, number>;
  /** µs a request of each function on the main thread, by the sampled frame's own time. */
  functions: Map<string, number>;
}

function split(file: string, requests: number): Split {
  const script = execFileSync('perf', ['script', '-i', file, '-F', 'comm,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  const kinds = new Map<string, number>();
  const functions = new Map<string, number>();
  const add = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  for (const block of script.split('\n\n')) {
    const [header, ...frames] = block.split('\n').map((line) => line.trim()).filter((line) => line !== '');
    if (header === undefined || frames.length === 0) continue;
    const thread = header.split(/\s+/)[0]!;
    add(kinds, 'all threads');
    add(kinds, thread === 'MainThread' ? `event loop: ${kindOf(frames)}` : `thread: ${thread}`);
    if (thread === 'MainThread') add(functions, functionOf(frames[0]!));
  }
  const perRequest = (counts: Map<string, number>) => new Map([...counts].map(([key, count]) => [key, (count * 1e6) / SAMPLES_PER_SECOND / requests]));
  return { kinds: perRequest(kinds), functions: perRequest(functions) };
}

const servers = fs
  .readdirSync(dir)
  .filter((name) => name.endsWith('.data'))
  .map((name) => {
    const base = name.slice(0, -'.data'.length);
    const requests = Number(fs.readFileSync(path.join(dir, `${base}.txt`), 'utf8').split(' ')[0]);
    return { name: base, figures: split(path.join(dir, name), requests) };
  });
const kinds = [...new Set(servers.flatMap((server) => [...server.figures.kinds.keys()]))].sort((a, b) => (a === 'all threads' ? -1 : b === 'all threads' ? 1 : a.localeCompare(b)));
const width = Math.max(...kinds.map((kind) => kind.length));
console.log(`${'µs a request'.padEnd(width)}  ${servers.map((server) => server.name.padStart(18)).join('')}`);
for (const kind of kinds) {
  console.log(`${kind.padEnd(width)}  ${servers.map((server) => (server.figures.kinds.get(kind) ?? 0).toFixed(1).padStart(18)).join('')}`);
}

if (options.functions !== undefined) {
  const named = (name: string | undefined) => servers.find((server) => name !== undefined && (server.name === name || server.name.endsWith(`-${name}`)));
  const [firstName, lastName] = options.between?.split(',') ?? [];
  const first = named(firstName) ?? servers[0];
  const last = named(lastName) ?? servers.at(-1);
  if (!first || !last) throw new Error('no perf recordings in DIR');
  const names = new Set([...first.figures.functions.keys(), ...last.figures.functions.keys()]);
  const difference = (name: string) => (last.figures.functions.get(name) ?? 0) - (first.figures.functions.get(name) ?? 0);
  const ranked = [...names].sort((a, b) => Math.abs(difference(b)) - Math.abs(difference(a))).slice(0, Number(options.functions));
  console.log(`\nevent loop, µs a request by function (own time): ${last.name} − ${first.name}, largest differences first`);
  for (const name of ranked) {
    const figures = [difference(name), first.figures.functions.get(name) ?? 0, last.figures.functions.get(name) ?? 0].map((figure) => figure.toFixed(2).padStart(7));
    console.log(`${figures.join('')}  ${name.slice(0, 140)}`);
  }
}
