/**
 * An open-loop load: requests sent on a fixed schedule (request i is due at start + i / rate),
 * whatever the server's answers, over at most `connections` keep-alive connections, and each
 * request's latency counted from when it was due, not from when a connection was free to send
 * it. A server that stalls for 30 ms then shows the requests due during the stall as 30 ms late,
 * where a closed loop (autocannon's connections, each waiting for its answer) sends fewer
 * requests during a stall and hides it; autocannon's rate options send each second's requests
 * in a burst at its start, which hides it too.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cpuSecondsOf, postgresCpuSeconds } from './harness.ts';

export interface OpenLoopOptions {
  /** Requests a second, sent evenly. */
  rate: number;
  seconds: number;
  connections: number;
  /** Seconds of the same load before the measured ones, not counted. */
  warmUpSeconds?: number;
  /** The server's process: its CPU time per request is reported too. */
  server?: ChildProcess;
  /** Report the CPU time of the host's PostgreSQL processes per request too. */
  postgres?: boolean;
}

export interface OpenLoopFigures {
  target: string;
  rate: number;
  /** Requests answered per second over the measured seconds (below `rate` when the server fell behind). */
  answeredPerSecond: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** Answers other than 2xx, and requests that failed. */
  errors: number;
  cpuMicrosPerRequest?: number;
  postgresCpuMicrosPerRequest?: number;
}

/** The latency at quantile `q` of sorted latencies, in ms. */
const quantile = (sorted: Float64Array, q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** What the generator process is asked to do (bench/open-loop-generator.ts). */
export interface GeneratorRequest {
  port: number;
  paths: readonly string[];
  rate: number;
  seconds: number;
  connections: number;
  warmUpSeconds: number;
}

/** What the generator process reports: `measuring` as the counted seconds begin, then the latencies. */
export type GeneratorReport = { kind: 'measuring' } | { kind: 'done'; latencies: Float64Array; failed: number; elapsedSeconds: number };

/**
 * Runs the load from a process of its own (bench/open-loop-generator.ts): sharing an event loop
 * with the benchmark's own work, the generator sent late and read answers late, and put
 * 11.9 ms of its own into a bare server's p99 at 5 000/s (1.8 ms from a process of its own).
 * The generator also allocates little: on a 2-core host its garbage collections (one a second,
 * four helper threads for ~20 ms of CPU with undici's request()) took the cores from the server
 * under test, whose requests then came late in bursts that were the generator's, not its own.
 * `onMeasuring` runs as the counted seconds begin, for CPU readings to start with them.
 */
function generate(request: GeneratorRequest, onMeasuring: () => void): Promise<Extract<GeneratorReport, { kind: 'done' }>> {
  const child = fork(fileURLToPath(new URL('./open-loop-generator.ts', import.meta.url)), { serialization: 'advanced', stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.on('message', (report: GeneratorReport) => {
      if (report.kind === 'measuring') onMeasuring();
      else resolve(report);
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`the open-loop generator exited with ${code} before reporting`)));
    child.send(request);
  });
}

/** The rates of an `--open-loop` option: polls a second, such as `2000,5000`, or `none`. */
export function openLoopRates(option: string): number[] {
  const rates = option === 'none' ? [] : option.split(',').map(Number);
  if (!rates.every((rate) => Number.isInteger(rate) && rate > 0)) throw new Error(`--open-loop: expected rates such as 2000,5000 or none, got "${option}"`);
  return rates;
}

/** Figures of an open-loop load of GETs of `paths` on 127.0.0.1:`port`, after a warm-up of the same load. */
export async function measureOpenLoop(target: string, port: number, paths: readonly string[], options: OpenLoopOptions): Promise<OpenLoopFigures> {
  let cpuBefore: number | undefined;
  let postgresBefore: number | undefined;
  const { latencies, failed, elapsedSeconds } = await generate(
    { port, paths, rate: options.rate, seconds: options.seconds, connections: options.connections, warmUpSeconds: options.warmUpSeconds ?? 2 },
    () => {
      cpuBefore = options.server?.pid === undefined ? undefined : cpuSecondsOf(options.server.pid);
      postgresBefore = options.postgres ? postgresCpuSeconds() : undefined;
    },
  );
  const answered = latencies.length - failed;
  const sorted = latencies.slice().sort();
  return {
    target,
    rate: options.rate,
    answeredPerSecond: answered / elapsedSeconds,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    p999: quantile(sorted, 0.999),
    max: sorted[sorted.length - 1]!,
    errors: failed,
    ...(cpuBefore !== undefined && answered > 0 && { cpuMicrosPerRequest: ((cpuSecondsOf(options.server!.pid!) - cpuBefore) * 1e6) / answered }),
    ...(postgresBefore !== undefined && answered > 0 && { postgresCpuMicrosPerRequest: ((postgresCpuSeconds() - postgresBefore) * 1e6) / answered }),
  };
}

/** One line of figures, for a bench's output. */
export function openLoopLine(figures: OpenLoopFigures): string {
  const cpu = figures.cpuMicrosPerRequest === undefined ? '' : `, CPU ${figures.cpuMicrosPerRequest.toFixed(0)} µs/request`;
  const postgres = figures.postgresCpuMicrosPerRequest === undefined ? '' : ` + PostgreSQL ${figures.postgresCpuMicrosPerRequest.toFixed(0)}`;
  return (
    `${figures.target}, open loop ${figures.rate}/s: answered ${figures.answeredPerSecond.toFixed(0)}/s, latency from due time ` +
    `p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms, p99.9 ${figures.p999.toFixed(1)} ms, max ${figures.max.toFixed(1)} ms, ` +
    `errors ${figures.errors}${cpu}${postgres}`
  );
}
