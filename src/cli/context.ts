import os from 'node:os';
import type { Command } from 'commander';
import type { ChangeSource } from '../audit/trail.ts';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { notFound } from '../http/errors.ts';
import type { KeyRing } from '../secrets/key-ring.ts';
import { parseDuration } from '../shared/duration.ts';

export interface CliContext {
  settings: Settings;
  db: Db;
  dialect: DialectStrategy;
  keyRing: KeyRing;
  close(): Promise<void>;
}

/**
 * Settings, a migrated database and its key ring, verified against the master key (a wrong
 * key is refused here, naming the key the database expects): what every command that touches
 * data needs.
 */
export async function openContext(): Promise<CliContext> {
  // Imported here rather than above: help, --version and usage errors need no database driver.
  const [{ loadSettings }, { dialectFor, openDatabase }, { migrateToLatest }, { loadMasterKey }, { loadKeyRing }, { createKeyRing }, { chainAllPendingEntries }] = await Promise.all([
    import('../config/settings.ts'),
    import('../db/database.ts'),
    import('../db/migrate.ts'),
    import('../secrets/master-key.ts'),
    import('../secrets/load-key-ring.ts'),
    import('../key-ring.ts'),
    import('../audit/chainer.ts'),
  ]);
  const settings = loadSettings();
  const masterKey = loadMasterKey(settings);
  const { db, dialect } = openDatabase(dialectFor(settings));
  try {
    await migrateToLatest(db, dialect);
    const keyRing = await loadKeyRing(createKeyRing(db, masterKey), settings);
    // A command's changes are chained as it ends, so that they are in the trail also when no server runs.
    const close = async () => {
      try {
        await chainAllPendingEntries(db, dialect.rowSet);
      } finally {
        await db.destroy();
      }
    };
    return { settings, db, dialect, keyRing, close };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

/** Who a command's changes are recorded as: the account that runs it, with no request behind it. */
export function cliChangeSource(): ChangeSource {
  const { username } = os.userInfo();
  return { actor: { kind: 'cli', id: username, name: username }, requestId: null, ip: null, userAgent: null };
}

/** For a --customer filter: a name that matches no customer is an error (exit 3), not an empty list. */
export async function requireCustomer(db: Db, name: string): Promise<void> {
  if (!(await db.selectFrom('customers').select('id').where('name', '=', name).executeTakeFirst())) throw notFound(`customer ${name} not found`);
}

/** Prints a command's result: one JSON object with --json, else readable lines. */
export function printResult(json: boolean | undefined, result: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${text}\n`);
}

/** `keyfleet customer …`, `keyfleet token …`: the group command, made by whichever file comes first. */
export function commandGroup(program: Command, name: string, description: string) {
  return program.commands.find((command) => command.name() === name) ?? program.command(name).description(description);
}

/** A malformed argument or option value: exit code 2, like a command line commander refuses. */
export class UsageError extends Error {}

/** --person: a person's id as lists show it. */
export function personIdOption(text: string): number {
  if (!/^[1-9]\d{0,15}$/.test(text)) throw new UsageError(`--person: expected a person id (a positive integer), got "${text}"`);
  return Number(text);
}

/** An option's duration ("0s", "30s", "15m", "1h", "7d", also "ms") in milliseconds, at least `minimumMs`. */
export function durationOption(option: string, text: string, minimumMs = 1): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms < minimumMs) throw new UsageError(`${option}: expected a ${minimumMs > 0 ? 'positive ' : ''}duration such as 30s, 15m, 1h or 7d, got "${text}"`);
  return ms;
}

/**
 * The process is gone this long after a stop signal whatever still runs: the documented stop
 * (docs/operator-guide.md, "Stopping") takes at most 10 s, and a supervisor kills later (the
 * systemd unit there at 15 s). The drain's own deadlines end well before; this bounds what
 * they do not (a database that stops answering while the last outcomes are written, say).
 */
export const STOP_LIMIT_MS = 9_500;

/** Starts the stop's time limit: past STOP_LIMIT_MS the process logs it and exits 1. */
export function limitStopTime(log: { error(message: string): void }): void {
  setTimeout(() => {
    log.error(`the stop did not finish within ${STOP_LIMIT_MS} ms; exiting without waiting for the rest`);
    process.exit(1);
  }, STOP_LIMIT_MS).unref();
}

/**
 * Calls `stop` once, on the first SIGTERM or SIGINT. A repeated signal is ignored rather than
 * fatal: under `npm start` the server gets each signal that reaches every process (Ctrl-C in a
 * terminal, a cgroup stop) twice, once more from npm forwarding its own.
 */
export function onStopSignal(stop: (signal: NodeJS.Signals) => void): void {
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      stop(signal);
    });
  }
}
