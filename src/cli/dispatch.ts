import type { Command } from 'commander';
import Fastify from 'fastify';
import metricsPlugin from '../observability/metrics.ts';
import statusEventsPlugin from '../webhooks/plugin.ts';
import { openContext } from './context.ts';

export function register(program: Command): void {
  program
    .command('dispatch')
    .description('deliver queued status events, without serving the API (any number may run on one PostgreSQL database)')
    .option('--metrics-port <port>', 'serve /metrics (Prometheus) on this port')
    .action(async (options: { metricsPort?: string }) => {
      const context = await openContext();
      const app = Fastify({ logger: { level: context.settings.logLevel } });
      app.decorate('settings', context.settings);
      app.decorate('db', context.db);
      app.decorate('dialect', context.dialect);
      app.decorate('keyRing', context.keyRing);
      await app.register(metricsPlugin);
      await app.register(statusEventsPlugin, { dispatch: true });
      const stop = async (signal: string) => {
        app.log.info({ signal }, 'shutting down');
        await app.close();
        await context.close();
        process.exit(0);
      };
      process.once('SIGTERM', () => void stop('SIGTERM'));
      process.once('SIGINT', () => void stop('SIGINT'));
      if (options.metricsPort === undefined) await app.ready();
      else await app.listen({ port: Number(options.metricsPort), host: context.settings.host });
      app.log.info('dispatching status events');
    });
}
