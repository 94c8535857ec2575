/**
 * An open-loop load: requests sent on a fixed schedule (request i is due at start + i / rate),
 * whatever the server's answers, over at most `connections` keep-alive connections, and each
 * request's latency counted from when it was due, not from when a connection was free to send
 * it. A server that stalls for 30 ms then shows the requests due during the stall as 30 ms late,
 * where a closed loop (autocannon's connections, each waiting for its answer) sends fewer
 * requests during a stall and hides it; autocannon's rate options send each second's requests
 * in a burst at its start, which hides it too.
 */
import { performance } from 'node:perf_hooks';
import type { ChildProcess } from 'node:child_process';
import { Pool } from 'undici';
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

/** How often the scheduler wakes to send the requests that have come due: a timer's resolution is 1 ms. */
const TICK_MS = 1;

/**
 * Sends GETs of `paths` in turn at `rate` a second for `seconds`; resolves with each request's
 * latency from its due time (ms), in the order sent, and how many failed.
 */
async function runOpenLoop(pool: Pool, paths: readonly string[], rate: number, seconds: number, firstPath: number): Promise<{ latencies: Float64Array; failed: number }> {
  const total = Math.round(rate * seconds);
  const latencies = new Float64Array(total);
  let failed = 0;
  let sent = 0;
  let settled = 0;
  const start = performance.now();
  return new Promise((resolve) => {
    const send = (index: number, due: number) => {
      pool
        .request({ method: 'GET', path: paths[(firstPath + index) % paths.length]! })
        .then(async ({ statusCode, body }) => {
          await body.dump();
          if (statusCode < 200 || statusCode >= 300) failed += 1;
        })
        .catch(() => {
          failed += 1;
        })
        .finally(() => {
          latencies[index] = performance.now() - due;
          settled += 1;
          if (settled === total) resolve({ latencies, failed });
        });
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total) {
        const due = start + (sent * 1000) / rate;
        if (due > now) break;
        send(sent, due);
        sent += 1;
      }
      if (sent < total) setTimeout(tick, TICK_MS);
    };
    tick();
  });
}

/** Figures of an open-loop load of GETs of `paths` on 127.0.0.1:`port`, after a warm-up of the same load. */
export async function measureOpenLoop(target: string, port: number, paths: readonly string[], options: OpenLoopOptions): Promise<OpenLoopFigures> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: options.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  try {
    const warmUp = options.warmUpSeconds ?? 2;
    if (warmUp > 0) await runOpenLoop(pool, paths, options.rate, warmUp, 0);
    const cpuBefore = options.server?.pid === undefined ? undefined : cpuSecondsOf(options.server.pid);
    const postgresBefore = options.postgres ? postgresCpuSeconds() : undefined;
    const started = performance.now();
    const { latencies, failed } = await runOpenLoop(pool, paths, options.rate, options.seconds, Math.round(options.rate * warmUp));
    const elapsedSeconds = (performance.now() - started) / 1000;
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
  } finally {
    await pool.close();
  }
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
