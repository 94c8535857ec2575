import type { Command } from 'commander';
import Fastify from 'fastify';
import { createOutageLog } from '../db/connection-errors.ts';
import metricsPlugin from '../observability/metrics.ts';
import statusEventsPlugin from '../webhooks/plugin.ts';
import { limitStopTime, onStopSignal, openContext } from './context.ts';

export function register(program: Command): void {
  program
    .command('dispatch')
    .description('deliver queued status events, without serving the API (any number may run on one PostgreSQL database)')
    .option('--metrics-port <port>', 'serve /metrics (Prometheus) on this port')
    .option('--json', 'a failure to start as one JSON object on stderr (the log is JSON lines already)')
    .action(async (options: { metricsPort?: string }) => {
      const context = await openContext();
      const app = Fastify({ logger: { level: context.settings.logLevel } });
      app.decorate('settings', context.settings);
      app.decorate('db', context.db);
      app.decorate('dialect', context.dialect);
      app.decorate('keyRing', context.keyRing);
      // The dispatcher outlives a database outage: it logs it and tries again on its next pass.
      const outageLog = createOutageLog(app.log);
      context.dialect.onConnectionLost?.((error) => outageLog('pooled connection lost', error));
      await app.register(metricsPlugin);
      await app.register(statusEventsPlugin, { dispatch: true });
      const stop = async (signal: string) => {
        app.log.info({ signal }, 'shutting down');
        limitStopTime(app.log);
        await app.close();
        await context.close();
        process.exit(0);
      };
      onStopSignal((signal) => void stop(signal));
      if (options.metricsPort === undefined) await app.ready();
      else await app.listen({ port: Number(options.metricsPort), host: context.settings.host });
      app.log.info('dispatching status events');
    });
}
