import type { Command } from 'commander';
import { buildServer } from '../server.ts';
import { openContext } from './context.ts';

export function register(program: Command): void {
  program
    .command('serve')
    .description('apply migrations and start the HTTP server')
    .action(async () => {
      const context = await openContext();
      const server = await buildServer(context);
      const stop = async (signal: string) => {
        server.log.info({ signal }, 'shutting down');
        await server.close();
        await context.close();
        process.exit(0);
      };
      process.once('SIGTERM', () => void stop('SIGTERM'));
      process.once('SIGINT', () => void stop('SIGINT'));
      await server.listen({ port: context.settings.port, host: context.settings.host });
    });
}
