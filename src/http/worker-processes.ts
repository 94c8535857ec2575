import cluster, { type Worker } from 'node:cluster';

export interface SupervisorLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface RestartBackoff {
  /** Wait before restarting a worker that died soon after its start; doubled for each such death in a row. */
  initialMs: number;
  maxMs: number;
  /** A worker that ran this long died of something else than its start: the next restart waits initialMs again. */
  stableAfterMs: number;
}

export const RESTART_BACKOFF: RestartBackoff = { initialMs: 1_000, maxMs: 30_000, stableAfterMs: 60_000 };

/** Workers still running this long after the stop signal are killed: each drains within 10 s itself. */
const STOP_DEADLINE_MS = 12_000;

export interface Supervisor {
  /** Forwards `signal` to every worker, restarts none any more, and resolves with the exit code once all have exited (0 if all drained). */
  stop(signal: NodeJS.Signals): Promise<number>;
}

/**
 * Runs `count` copies of this process's command as cluster workers sharing its listening
 * port (the primary accepts and hands connections round-robin). A worker that exits
 * unasked is logged and restarted in its slot, after a wait that doubles while workers
 * keep dying young.
 */
export function superviseWorkers(count: number, log: SupervisorLog, backoff: RestartBackoff = RESTART_BACKOFF): Supervisor {
  const running = new Map<number, { worker: Worker; startedAt: number }>();
  const youngDeaths = new Map<number, number>();
  const restartTimers = new Set<NodeJS.Timeout>();
  let stopping: NodeJS.Signals | undefined;
  let failedExits = 0;
  let allExited: (() => void) | undefined;

  const start = (slot: number) => {
    const worker = cluster.fork();
    running.set(slot, { worker, startedAt: Date.now() });
    worker.once('listening', (address) => log.info({ worker: slot, workerPid: worker.process.pid, port: address.port }, 'worker listening'));
    worker.once('exit', (code, signal) => {
      const { startedAt } = running.get(slot)!;
      running.delete(slot);
      if (stopping) {
        // A worker still starting when the signal came has no handler for it yet: it stopped as asked.
        if (code !== 0 && signal !== stopping) failedExits += 1;
        log.info({ worker: slot, workerPid: worker.process.pid, code, signal }, 'worker stopped');
        if (running.size === 0) allExited?.();
        return;
      }
      const deaths = Date.now() - startedAt >= backoff.stableAfterMs ? 0 : (youngDeaths.get(slot) ?? 0);
      youngDeaths.set(slot, deaths + 1);
      const delayMs = Math.min(backoff.maxMs, backoff.initialMs * 2 ** deaths);
      log.error({ worker: slot, workerPid: worker.process.pid, code, signal, restartInMs: delayMs }, 'worker exited unexpectedly; restarting it');
      const timer = setTimeout(() => {
        restartTimers.delete(timer);
        start(slot);
      }, delayMs);
      restartTimers.add(timer);
    });
  };

  for (let slot = 1; slot <= count; slot++) start(slot);
  log.info({ workers: count }, 'started worker processes');

  return {
    async stop(signal) {
      stopping = signal;
      for (const timer of restartTimers) clearTimeout(timer);
      restartTimers.clear();
      if (running.size > 0) {
        const exited = new Promise<void>((resolve) => (allExited = resolve));
        for (const { worker } of running.values()) worker.process.kill(signal);
        const deadline = setTimeout(() => {
          log.warn({ workers: [...running.keys()] }, 'workers still running at the stop deadline; killing them');
          for (const { worker } of running.values()) worker.process.kill('SIGKILL');
        }, STOP_DEADLINE_MS);
        await exited;
        clearTimeout(deadline);
      }
      return failedExits === 0 ? 0 : 1;
    },
  };
}
