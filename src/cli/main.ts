// First: on a Node.js too old for keyfleet this stops with a message before any driver loads.
import '../config/node-runtime-guard.ts';
import { Command, CommanderError } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { InvalidCursorError } from '../db/cursor-pages.ts';
import { HttpError } from '../http/errors.ts';
import { COMMANDS } from './commands.ts';
import { UsageError } from './context.ts';

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

/** The code of an unknown "--…" word that stands where an argument belongs. */
const DASHED_VALUE = 'keyfleet.dashedValue';

// Names, serials and key ids may begin with "-" (a base64url kid does, one time in 64), so a
// command that takes an argument reads an unknown "-x…" word as it. A word beginning with "--"
// is still an option unless it follows "--": a misspelt option must not become a name, nor be
// reported as one argument too many.
for (const command of program.commands.flatMap((group) => [group, ...group.commands])) {
  if (command.registeredArguments.length > 0) command.allowUnknownOption().allowExcessArguments();
}
program.hook('preAction', (_program, command) => {
  const expected = command.registeredArguments.length;
  const unknown = command.args.find((word) => word.startsWith('--') && optionWords.includes(word));
  if (unknown !== undefined) {
    // Standing where an argument belongs, it may be a value (a kid, one time in 4096): the hint says how to give one.
    const code = command.args.length <= expected ? DASHED_VALUE : 'commander.unknownOption';
    command.error(`unknown option '${unknown}'`, { code });
  }
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
    const valueHint = error.code === DASHED_VALUE ? "A value that begins with '--' goes after '--'. " : '';
    return { exitCode: EXIT.usage, code: 'usage', message, hint: `${valueHint}Run '${commandPath()} --help' for usage.` };
  }
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof UsageError || error instanceof InvalidCursorError) return { exitCode: EXIT.usage, code: 'usage', message };
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
