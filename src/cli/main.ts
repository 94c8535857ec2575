// First: on a Node.js too old for keyfleet this stops with a message before any driver loads.
import '../config/node-runtime-guard.ts';
import { Command, CommanderError } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { HttpError } from '../http/errors.ts';
import { UsageError } from './context.ts';

type Loader = () => Promise<{ register(program: Command): void }>;

/**
 * The top-level words, what each does, and the files that define its commands: a command
 * (serve) or a group's commands by their word (customer create). Only the file of the
 * command given is loaded, or a group's files for its help: each brings in its part of the
 * server (Fastify, the database drivers, X.509…), and loading all of them would cost every
 * command most of a second.
 */
const COMMANDS: Record<string, { description: string } & ({ load: Loader } | { commands: Record<string, Loader> })> = {
  serve: { description: 'apply migrations and start the HTTP server', load: () => import('./serve.ts') },
  dispatch: {
    description: 'deliver queued status events, without serving the API (any number may run on one PostgreSQL database)',
    load: () => import('./dispatch.ts'),
  },
  migrate: { description: 'apply pending database migrations and exit', load: () => import('./migrate.ts') },
  console: { description: 'print a sign-in URL of the operator console', load: () => import('./console.ts') },
  customer: {
    description: 'manage customers (tenants)',
    commands: { create: () => import('./customer-create.ts'), list: () => import('./customer-list.ts'), update: () => import('./customer-update.ts') },
  },
  token: {
    description: 'issue, list and revoke API tokens',
    commands: { issue: () => import('./token-issue.ts'), list: () => import('./token-list.ts'), revoke: () => import('./token-revoke.ts') },
  },
  role: {
    description: 'bind people and IdP groups to roles',
    commands: { bind: () => import('./role-bind.ts'), unbind: () => import('./role-unbind.ts'), list: () => import('./role-list.ts') },
  },
  session: { description: 'list and end the sessions of people signed in', commands: { list: () => import('./session-list.ts'), revoke: () => import('./session-revoke.ts') } },
  'signing-key': {
    description: 'manage the key that signs the deployment’s JWTs',
    commands: { list: () => import('./signing-key-list.ts'), rotate: () => import('./signing-key-rotate.ts'), retire: () => import('./signing-key-retire.ts') },
  },
  'master-key': {
    description: 'manage the key that encrypts private keys and secrets at rest',
    commands: { rotate: () => import('./master-key-rotate.ts'), retire: () => import('./master-key-retire.ts') },
  },
  apikey: {
    description: 'manage DLock API keys',
    commands: { create: () => import('./apikey-create.ts'), list: () => import('./apikey-list.ts'), revoke: () => import('./apikey-revoke.ts') },
  },
  cert: {
    description: 'manage customer intermediate certificates',
    commands: {
      create: () => import('./cert-create.ts'),
      list: () => import('./cert-list.ts'),
      import: () => import('./cert-import.ts'),
      'import-root': () => import('./cert-import-root.ts'),
      export: () => import('./cert-export.ts'),
      verify: () => import('./cert-verify.ts'),
    },
  },
  okm: {
    description: 'manage OKMs',
    commands: { pending: () => import('./okm-pending.ts'), accept: () => import('./okm-accept.ts'), token: () => import('./okm-token.ts') },
  },
  audit: { description: 'verify and export the audit trail of changes', commands: { verify: () => import('./audit-verify.ts'), export: () => import('./audit-export.ts') } },
  webhook: { description: 'status event webhooks', commands: { secret: () => import('./webhook-secret.ts') } },
  rollout: {
    description: 'staged firmware rollouts',
    commands: {
      create: () => import('./rollout-create.ts'),
      list: () => import('./rollout-list.ts'),
      show: () => import('./rollout-show.ts'),
      start: () => import('./rollout-start.ts'),
      pause: () => import('./rollout-pause.ts'),
      resume: () => import('./rollout-resume.ts'),
      advance: () => import('./rollout-advance.ts'),
      abort: () => import('./rollout-abort.ts'),
      approve: () => import('./rollout-approve.ts'),
    },
  },
  simulate: {
    description: 'run a fleet of virtual OKMs against a server (load tests, rollout rehearsals)',
    load: () => import('./simulate.ts'),
  },
};

/** Exit codes (docs/operator-guide.md, "Exit codes"). */
const EXIT = { failure: 1, usage: 2, notFound: 3, conflict: 4 } as const;

interface Failure {
  exitCode: number;
  code: string;
  message: string;
  hint?: string;
}

const argv = process.argv.slice(2);
const separator = argv.indexOf('--');
/** The words before "--": what may be options. */
const optionWords = separator === -1 ? argv : argv.slice(0, separator);
const words = optionWords.filter((word) => !word.startsWith('-'));
const json = optionWords.includes('--json');

const program = new Command('keyfleet')
  .description('keyfleet server and admin CLI')
  .version(packageJson.version, '-V, --version', 'print the version')
  // -V means the version only before a command: after it, "-V…" is a word (a kid may begin with it).
  .enablePositionalOptions()
  .exitOverride()
  .configureOutput({ outputError: () => {} });

/** record[key] when record has it as its own ("constructor" is no command). */
const own = <T>(record: Record<string, T>, key: string | undefined): T | undefined => (key !== undefined && Object.hasOwn(record, key) ? record[key] : undefined);

const named = own(COMMANDS, words[0]);
if (named) {
  // The command's file; for a group, its command's, or all of its files (its help, a misspelt command).
  const command = 'load' in named ? named.load : own(named.commands, words[1]);
  for (const load of command ? [command] : Object.values('commands' in named ? named.commands : {})) (await load()).register(program);
} else {
  // No command named (help, --version, a misspelt command): the list is enough.
  for (const [name, { description }] of Object.entries(COMMANDS)) program.command(name).description(description);
}

// Names, serials and key ids may begin with "-" (a base64url kid does, one time in 64), so a
// command that takes an argument reads an unknown "-x…" word as it. A word beginning with "--"
// is still an option unless it follows "--": a misspelt option must not become a name, nor be
// reported as one argument too many.
for (const command of program.commands.flatMap((group) => [group, ...group.commands])) {
  if (command.registeredArguments.length > 0) command.allowUnknownOption().allowExcessArguments();
}
program.hook('preAction', (_program, command) => {
  const unknown = command.args.find((word) => word.startsWith('--') && optionWords.includes(word));
  if (unknown !== undefined) command.error(`unknown option '${unknown}'`, { code: 'commander.unknownOption' });
  const expected = command.registeredArguments.length;
  if (command.args.length > expected) {
    command.error(`too many arguments for '${command.name()}': expected ${expected}, got ${command.args.length}`, { code: 'commander.excessArguments' });
  }
});

/** The command the words name, as far as they name one: where the usage hint points. */
function commandPath(): string {
  const path = ['keyfleet'];
  let command: Command = program;
  for (const word of words) {
    const next = command.commands.find((sub) => sub.name() === word);
    if (!next) break;
    path.push(word);
    command = next;
  }
  return path.join(' ');
}

function failureOf(error: unknown): Failure {
  if (error instanceof CommanderError) {
    // "error: unknown command 'lst'\n(Did you mean list?)": one line, the suggestion lower-case.
    const message = error.message.replace(/^error: /, '').replace(/\n\(Did you mean/, ' (did you mean');
    return { exitCode: EXIT.usage, code: 'usage', message, hint: `Run '${commandPath()} --help' for usage.` };
  }
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof UsageError) return { exitCode: EXIT.usage, code: 'usage', message };
  // The domain's refusals are HTTP errors: a malformed value (400), nothing by that name (404), taken or in the way (409).
  const statusCode = error instanceof HttpError ? error.statusCode : undefined;
  if (statusCode === 400) return { exitCode: EXIT.usage, code: 'usage', message };
  if (statusCode === 404) return { exitCode: EXIT.notFound, code: 'not_found', message };
  if (statusCode === 409) return { exitCode: EXIT.conflict, code: 'conflict', message };
  return { exitCode: EXIT.failure, code: 'failed', message };
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Help and the version were printed as asked: that is success. Help printed because a
  // group was given no command ("keyfleet customer") is a usage error, the help its hint.
  if (error instanceof CommanderError && error.code === 'commander.help') process.exit(EXIT.usage);
  if (error instanceof CommanderError && error.exitCode === 0) process.exit(0);
  const { exitCode, code, message, hint } = failureOf(error);
  process.stderr.write(json ? `${JSON.stringify({ error: { code, message, ...(hint ? { hint } : {}) } })}\n` : `keyfleet: ${message}\n${hint ? `${hint}\n` : ''}`);
  process.exit(exitCode);
}
