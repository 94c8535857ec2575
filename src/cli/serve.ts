import type { Command } from 'commander';
import { startBackgroundReseal } from '../secrets/reseal.ts';
import { buildServer } from '../server.ts';
import { onStopSignal, openContext } from './context.ts';

/** Requests still running this long after SIGTERM lose their connections, so that the process exits within 10 s. */
const DRAIN_DEADLINE_MS = 8_000;

export function register(program: Command): void {
  program
    .command('serve')
    .description('apply migrations and start the HTTP server')
    .option('--json', 'a failure to start as one JSON object on stderr (the log is JSON lines already)')
    .action(async () => {
      const context = await openContext();
      const server = await buildServer(context);
      const reseal = startBackgroundReseal(context.db, context.keyRing, server.log);
      server.addHook('onClose', () => reseal.stop());
      // Graceful shutdown: stop accepting, let in-flight requests finish (new requests on open
      // keep-alive connections get 503), stop background work (the close hooks), close the database.
      const stop = async (signal: string) => {
        server.log.info({ signal }, 'shutting down');
        const deadline = setTimeout(() => {
          server.log.warn('requests still running at the shutdown deadline; closing their connections');
          server.server.closeAllConnections();
        }, DRAIN_DEADLINE_MS).unref();
        try {
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
      await server.listen({ port: context.settings.port, host: context.settings.host });
    });
}
