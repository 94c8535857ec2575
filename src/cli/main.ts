import { Command } from 'commander';
import { register as customerCreate } from './customer-create.ts';
import { register as migrate } from './migrate.ts';
import { register as serve } from './serve.ts';
import { register as tokenIssue } from './token-issue.ts';

const program = new Command('keyfleet').description('keyfleet server and admin CLI').showHelpAfterError();

for (const register of [serve, migrate, customerCreate, tokenIssue]) register(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.stderr.write(`keyfleet: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
