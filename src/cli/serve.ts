import cluster from 'node:cluster';
import type { Command } from 'commander';
import { pino } from 'pino';
import { loadSettings, MAX_SERVE_WORKERS, type Settings } from '../config/settings.ts';
import { drainConnections } from '../http/draining.ts';
import { superviseWorkers } from '../http/worker-processes.ts';
import { startBackgroundReseal } from '../secrets/reseal.ts';
import { buildServer } from '../server.ts';
import { limitStopTime, onStopSignal, openContext, UsageError, type CliContext } from './context.ts';

/**
 * Requests still running this long after SIGTERM lose their connections, so that the process
 * exits within 10 s (deliveries in flight are cut earlier: STOP_DELIVERIES_AFTER_MS after the
 * linger, when the background work is told to stop).
 */
const DRAIN_DEADLINE_MS = 8_000;
/**
 * How long the open keep-alive connections are still read after SIGTERM, each request on them
 * answered (503 once the drain has begun), before the idle ones are closed: far longer than a
 * request already on its way takes to arrive, far inside DRAIN_DEADLINE_MS.
 */
const LINGER_MS = 500;

/** --workers, else SERVE_WORKERS; several only on PostgreSQL. */
function workerCount(option: string | undefined, settings: Settings): number {
  const source = option === undefined ? 'SERVE_WORKERS' : '--workers';
  let count = settings.serveWorkers;
  if (option !== undefined) {
    count = Number(option);
    if (!/^\d+$/.test(option) || count < 1 || count > MAX_SERVE_WORKERS) throw new UsageError(`--workers: expected an integer 1–${MAX_SERVE_WORKERS}, got "${option}"`);
  }
  if (count > 1 && settings.databaseUrl === undefined) {
    throw new UsageError(
      `${source} ${count}: several worker processes need PostgreSQL (DATABASE_URL); SQLite takes one writer at a time, so more processes would only queue for its lock (docs/adr/0073-sqlite-serves-from-one-process.md)`,
    );
  }
  return count;
}

/**
 * Serves in this process until SIGTERM or SIGINT: stops accepting, keeps reading the open
 * keep-alive connections for LINGER_MS and answers every request on them 503
 * (drainConnections), lets in-flight requests finish, stops background work (the close hooks),
 * closes the database, exits 0. A cluster worker stops the same way when its primary goes away.
 */
async function serveHere(context: CliContext, { reseal }: { reseal: boolean }): Promise<void> {
  const server = await buildServer(context);
  if (reseal) {
    const resealing = startBackgroundReseal(context.db, context.keyRing, server.log);
    server.addHook('onClose', () => resealing.stop());
  }
  const stop = async (signal: string) => {
    server.log.info({ signal }, 'shutting down');
    limitStopTime(server.log);
    const deadline = setTimeout(() => {
      server.log.warn('requests still running at the shutdown deadline; closing their connections');
      server.server.closeAllConnections();
    }, DRAIN_DEADLINE_MS).unref();
    try {
      await drainConnections(server, LINGER_MS);
      await server.close();
      await context.close();
      server.log.info('stopped');
      process.exit(0);
    } catch (error) {
      server.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    } finally {
      clearTimeout(deadline);
    }
  };
  onStopSignal((signal) => void stop(signal));
  // A worker whose primary died (SIGKILL, a crash) stops as if signalled, rather than serve on alone.
  if (cluster.isWorker) process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  await server.listen({ port: context.settings.port, host: context.settings.host });
}

/**
 * The primary of `--workers N`: it migrates and checks the key ring (in openContext, so that
 * a wrong setting stops the start before any worker), reseals in the background (once, not in
 * every worker), forks the workers and forwards a stop signal to them; it exits once they
 * have drained.
 */
async function superviseHere(context: CliContext, count: number): Promise<void> {
  const log = pino({ level: context.settings.logLevel });
  const resealing = startBackgroundReseal(context.db, context.keyRing, log);
  const supervisor = superviseWorkers(count, log);
  onStopSignal((signal) => {
    log.info({ signal }, 'shutting down');
    limitStopTime(log);
    void (async () => {
      const exitCode = await supervisor.stop(signal);
      await resealing.stop();
      await context.close();
      log.info({ exitCode }, 'stopped');
      process.exit(exitCode);
    })();
  });
}

export function register(program: Command): void {
  program
    .command('serve')
    .description('apply migrations and start the HTTP server')
    .option('--workers <count>', `processes serving the port, PostgreSQL only (default SERVE_WORKERS, else 1; at most ${MAX_SERVE_WORKERS})`)
    .option('--json', 'a failure to start as one JSON object on stderr (the log is JSON lines already)')
    .action(async (options: { workers?: string }) => {
      // Refused before the database is opened (and, for SQLite, made).
      const count = cluster.isWorker ? 1 : workerCount(options.workers, loadSettings());
      const context = await openContext();
      if (cluster.isWorker) return serveHere(context, { reseal: false });
      return count === 1 ? serveHere(context, { reseal: true }) : superviseHere(context, count);
    });
}
