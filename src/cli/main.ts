import { Command } from 'commander';
import { register as apikeyCreate } from './apikey-create.ts';
import { register as apikeyRevoke } from './apikey-revoke.ts';
import { register as certCreate } from './cert-create.ts';
import { register as certExport } from './cert-export.ts';
import { register as certImport } from './cert-import.ts';
import { register as certImportRoot } from './cert-import-root.ts';
import { register as certVerify } from './cert-verify.ts';
import { register as customerCreate } from './customer-create.ts';
import { register as masterKeyRetire } from './master-key-retire.ts';
import { register as masterKeyRotate } from './master-key-rotate.ts';
import { register as dispatch } from './dispatch.ts';
import { register as migrate } from './migrate.ts';
import { register as okmAccept } from './okm-accept.ts';
import { register as okmPending } from './okm-pending.ts';
import { register as okmToken } from './okm-token.ts';
import { register as serve } from './serve.ts';
import { register as signingKeyList } from './signing-key-list.ts';
import { register as signingKeyRetire } from './signing-key-retire.ts';
import { register as signingKeyRotate } from './signing-key-rotate.ts';
import { register as tokenIssue } from './token-issue.ts';
import { register as webhookSecret } from './webhook-secret.ts';

const program = new Command('keyfleet').description('keyfleet server and admin CLI').showHelpAfterError();

for (const register of [
  serve,
  dispatch,
  migrate,
  customerCreate,
  tokenIssue,
  signingKeyList,
  signingKeyRotate,
  signingKeyRetire,
  masterKeyRotate,
  masterKeyRetire,
  apikeyCreate,
  apikeyRevoke,
  certCreate,
  certImport,
  certImportRoot,
  certExport,
  certVerify,
  okmPending,
  okmAccept,
  okmToken,
  webhookSecret,
]) register(program);

// Names, serials and key ids may begin with "-" (a base64url kid does, one time in 64), so a
// command that takes an argument reads an unknown "-x…" word as it. A word beginning with "--"
// is still an option unless it follows "--": a misspelt option must not become a name.
for (const command of program.commands.flatMap((group) => [group, ...group.commands])) {
  if (command.registeredArguments.length > 0) command.allowUnknownOption();
}
program.hook('preAction', (_program, command) => {
  const separator = process.argv.indexOf('--');
  const options = separator === -1 ? process.argv : process.argv.slice(0, separator);
  const unknown = command.args.find((word) => word.startsWith('--') && options.includes(word));
  if (unknown !== undefined) command.error(`error: unknown option '${unknown}'`);
});

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.stderr.write(`keyfleet: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
