/**
 * Where each server's CPU goes, per request, from the `perf record` files that
 * `bench:poll-floor -- --perf DIR` writes: by thread, and on the event loop by what the sampled
 * instruction was (JavaScript compiled by V8, V8's builtins, the rest of node and V8, SQLite,
 * the C library, the kernel by the system call it serves). Side by side, so that keyfleet's
 * CPU above the floor is seen by kind.
 *
 *   npx tsx bench/perf-split.ts DIR
 *
 * Needs Linux `perf`. A sample is 1/999 s of CPU; µs per request = samples / 999 / requests.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const SAMPLES_PER_SECOND = 999;
const dir = process.argv[2];
if (!dir) throw new Error('usage: npx tsx bench/perf-split.ts DIR (the --perf directory of bench:poll-floor)');

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

/** µs per request of each thread and, on the main thread, of each kind. */
function split(file: string, requests: number): Map<string, number> {
  const script = execFileSync('perf', ['script', '-i', file, '-F', 'comm,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  const samples = new Map<string, number>();
  const add = (kind: string) => samples.set(kind, (samples.get(kind) ?? 0) + 1);
  for (const block of script.split('\n\n')) {
    const [header, ...frames] = block.split('\n').map((line) => line.trim()).filter((line) => line !== '');
    if (header === undefined || frames.length === 0) continue;
    const thread = header.split(/\s+/)[0]!;
    add('all threads');
    add(thread === 'MainThread' ? `event loop: ${kindOf(frames)}` : `thread: ${thread}`);
  }
  return new Map([...samples].map(([kind, count]) => [kind, (count * 1e6) / SAMPLES_PER_SECOND / requests]));
}

const servers = fs
  .readdirSync(dir)
  .filter((name) => name.endsWith('.data'))
  .map((name) => {
    const base = name.slice(0, -'.data'.length);
    const requests = Number(fs.readFileSync(path.join(dir, `${base}.txt`), 'utf8').split(' ')[0]);
    return { name: base, figures: split(path.join(dir, name), requests) };
  });
const kinds = [...new Set(servers.flatMap((server) => [...server.figures.keys()]))].sort((a, b) => (a === 'all threads' ? -1 : b === 'all threads' ? 1 : a.localeCompare(b)));
const width = Math.max(...kinds.map((kind) => kind.length));
console.log(`${'µs a request'.padEnd(width)}  ${servers.map((server) => server.name.padStart(18)).join('')}`);
for (const kind of kinds) {
  console.log(`${kind.padEnd(width)}  ${servers.map((server) => (server.figures.get(kind) ?? 0).toFixed(1).padStart(18)).join('')}`);
}
