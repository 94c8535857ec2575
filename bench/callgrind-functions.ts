/**
 * Instructions a poll by function, from the callgrind dumps `poll-instructions.ts --keep-dumps`
 * keeps: one dump's functions, or two dumps' differences, largest first. Compiled JavaScript has
 * no symbols in a dump (callgrind names it by address); given the perf map node writes when run
 * with `--perf-basic-prof` (/tmp/perf-PID.map, PID as in the dump's name), each address is
 * named by the function V8 compiled there, so that the compiled code's share is seen per
 * JavaScript function rather than as one sum. Counts are self costs (what the function itself
 * ran, not its callees).
 *
 *   NODE_OPTIONS=--perf-basic-prof npx tsx bench/poll-instructions.ts --base DIR --keep-dumps DUMPS
 *   npx tsx bench/callgrind-functions.ts DUMPS/1/callgrind.out.PID.5-01 [DUMPS/2/callgrind.out.PID2.5-01] [--polls 2000] [--top 25]
 *
 * The perf map of each dump is found by the PID in its name; without one, compiled code is
 * summed as `compiled JavaScript (unnamed)`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: options, positionals: dumps } = parseArgs({
  options: { polls: { type: 'string', default: '2000' }, top: { type: 'string', default: '25' } },
  allowPositionals: true,
});
if (dumps.length < 1 || dumps.length > 2) throw new Error('usage: callgrind-functions.ts DUMP [BASE_DUMP] [--polls N] [--top N]');
const POLLS = Number(options.polls);
const TOP = Number(options.top);

interface CodeRange {
  start: bigint;
  end: bigint;
  name: string;
}

/** node's perf map for the process of `dump`: each compiled function's address range and name, sorted by start (a later entry for a start replaces an earlier). */
function perfMapOf(dump: string): CodeRange[] {
  const pid = /callgrind\.out\.(\d+)/.exec(path.basename(dump))?.[1];
  const file = `/tmp/perf-${pid}.map`;
  if (pid === undefined || !fs.existsSync(file)) return [];
  const byStart = new Map<bigint, CodeRange>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const [start, size, ...name] = line.split(' ');
    if (start === undefined || size === undefined || name.length === 0) continue;
    const from = BigInt(`0x${start}`);
    byStart.set(from, { start: from, end: from + BigInt(`0x${size}`), name: name.join(' ') });
  }
  return [...byStart.values()].sort((a, b) => (a.start < b.start ? -1 : 1));
}

function nameAt(ranges: readonly CodeRange[], address: bigint): string | undefined {
  let low = 0;
  let high = ranges.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const range = ranges[middle]!;
    if (address < range.start) high = middle - 1;
    else if (address >= range.end) low = middle + 1;
    else return range.name;
  }
  return undefined;
}

/**
 * A perf map's name of a JavaScript function, the same in any checkout and at any tier: without
 * V8's tier mark (`JS:*'` optimized, `JS:+'`, `JS:^` and `JS:~` below) and with the path of the
 * checkout's dist/ left out.
 */
const comparable = (name: string) => name.replace(/^JS:[*+^~]?'?/, '').replace(/file:\/\/\S*?\/dist\//, 'dist/');

/** Self instructions a poll of each function in `dump`. */
function functionsOf(dump: string): Map<string, number> {
  const ranges = perfMapOf(dump);
  const annotated = execFileSync('callgrind_annotate', ['--threshold=100', dump], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const functions = new Map<string, number>();
  for (const line of annotated.split('\n')) {
    const match = /^\s*([\d,]+) \([\s\d.]+%\)\s+(.+)$/.exec(line);
    if (!match || line.includes('PROGRAM TOTALS')) continue;
    const count = Number(match[1]!.replaceAll(',', ''));
    // "file:function [object]": the function, without its object.
    let name = match[2]!.replace(/\s*\[[^\]]*\]$/, '').replace(/^[^:]*:/, '');
    const address = /^0x([0-9a-f]+)/.exec(name)?.[1];
    if (address !== undefined) name = comparable(nameAt(ranges, BigInt(`0x${address}`)) ?? 'compiled JavaScript (unnamed)');
    functions.set(name, (functions.get(name) ?? 0) + count / POLLS);
  }
  return functions;
}

const format = (value: number) => value.toFixed(0).padStart(9);
const sum = (functions: Map<string, number>) => [...functions.values()].reduce((total, count) => total + count, 0);

const [dump, baseDump] = dumps as [string, string | undefined];
const functions = functionsOf(dump);
if (baseDump === undefined) {
  console.log(`${format(sum(functions))}  instructions a poll in all`);
  for (const [name, count] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${format(count)}  ${name}`);
} else {
  const base = functionsOf(baseDump);
  const differences = [...new Set([...functions.keys(), ...base.keys()])]
    .map((name) => ({ name, count: functions.get(name) ?? 0, base: base.get(name) ?? 0 }))
    .sort((a, b) => b.count - b.base - (a.count - a.base));
  console.log(`${format(sum(functions) - sum(base))}  instructions a poll in all: ${sum(functions).toFixed(0)} against ${sum(base).toFixed(0)}`);
  console.log('   change      this      base  function');
  const line = ({ name, count, base: was }: (typeof differences)[number]) => console.log(`${format(count - was)} ${format(count)} ${format(was)}  ${name}`);
  differences.slice(0, TOP).forEach(line);
  console.log('  …');
  differences.slice(-TOP).forEach(line);
}
