/**
 * The open-loop load generator of bench/open-loop.ts, in a process of its own: given a
 * GeneratorRequest by IPC, it sends the warm-up and then the counted requests on their
 * schedule, and reports `measuring` between the two and the latencies at the end.
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { GeneratorReport, GeneratorRequest } from './open-loop.ts';

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
    const settle = (index: number, due: number, ok: boolean) => {
      latencies[index] = performance.now() - due;
      if (!ok) failed += 1;
      settled += 1;
      if (settled === total) resolve({ latencies, failed });
    };
    // undici's dispatch with a handler, not request(): no promise and no body stream per request,
    // so that the generator allocates little and its collections stay short (see generate()).
    const send = (index: number, due: number) => {
      let ok = false;
      pool.dispatch(
        { method: 'GET', path: paths[(firstPath + index) % paths.length]! },
        {
          onConnect: () => {},
          onHeaders: (statusCode) => {
            ok = statusCode >= 200 && statusCode < 300;
            return true;
          },
          onData: () => true,
          onComplete: () => settle(index, due, ok),
          onError: () => settle(index, due, false),
        },
      );
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

process.once('message', async (request: GeneratorRequest) => {
  const pool = new Pool(`http://127.0.0.1:${request.port}`, { connections: request.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const report = (message: GeneratorReport) => new Promise<void>((resolve, reject) => process.send!(message, (error: Error | null) => (error ? reject(error) : resolve())));
  try {
    if (request.warmUpSeconds > 0) await runOpenLoop(pool, request.paths, request.rate, request.warmUpSeconds, 0);
    await report({ kind: 'measuring' });
    const started = performance.now();
    const { latencies, failed } = await runOpenLoop(pool, request.paths, request.rate, request.seconds, Math.round(request.rate * request.warmUpSeconds));
    await report({ kind: 'done', latencies, failed, elapsedSeconds: (performance.now() - started) / 1000 });
  } finally {
    await pool.close();
    process.disconnect();
  }
});
