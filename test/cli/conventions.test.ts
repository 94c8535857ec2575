import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Command } from 'commander';
import packageJson from '../../package.json' with { type: 'json' };
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

describe('keyfleet command-line conventions', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-cli-'));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const keyfleet = (...args: string[]) => runKeyfleet({ DATA_DIR: dataDir }, ...args);

  test('--version prints the version and exits 0', async () => {
    const run = await keyfleet('--version');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout, `${packageJson.version}\n`);
  });

  test('a usage error prints one line and one hint, not the help, and exits 2', async () => {
    const misspeltCommand = await keyfleet('customer', 'lst');
    const missingArgument = await keyfleet('customer', 'create');
    const misspeltOption = await keyfleet('customer', 'create', 'acme', '--jsn');
    const extraArgument = await keyfleet('customer', 'create', 'acme', 'globex');

    assert.deepEqual(
      [misspeltCommand, missingArgument, misspeltOption, extraArgument].map((run) => [run.exitCode, run.stdout, run.stderr]),
      [
        [2, '', "keyfleet: unknown command 'lst' (did you mean list?)\nRun 'keyfleet customer --help' for usage.\n"],
        [2, '', "keyfleet: missing required argument 'name'\nRun 'keyfleet customer create --help' for usage.\n"],
        [2, '', "keyfleet: unknown option '--jsn'\nRun 'keyfleet customer create --help' for usage.\n"],
        [2, '', "keyfleet: too many arguments for 'create': expected 1, got 2\nRun 'keyfleet customer create --help' for usage.\n"],
      ],
    );
    assert.equal(fs.readdirSync(dataDir).length, 0, 'a usage error touches no database');
  });

  test('a group given no command prints its commands on stderr and exits 2', async () => {
    const run = await keyfleet('apikey');

    assert.equal(run.exitCode, 2);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^Usage: keyfleet apikey /);
    assert.match(run.stderr, /^ {2}list \[options\] +list the DLock API keys/m);
  });

  test('with --json, a usage error is one JSON object on stderr, and a malformed option value exits 2 too', async () => {
    const misspelt = await keyfleet('apikey', 'list', '--custmer', 'acme', '--json');
    const malformed = await keyfleet('token', 'issue', '--scope', 'admin', '--ttl', '1w', '--json');

    assert.equal(misspelt.exitCode, 2);
    assert.equal(misspelt.stdout, '');
    assert.deepEqual(JSON.parse(misspelt.stderr), {
      error: { code: 'usage', message: "unknown option '--custmer' (did you mean --customer?)", hint: "Run 'keyfleet apikey list --help' for usage." },
    });
    assert.equal(malformed.exitCode, 2);
    assert.deepEqual(JSON.parse(malformed.stderr), {
      error: { code: 'usage', message: '--ttl: expected a positive duration such as 30s, 15m, 1h or 7d, got "1w"' },
    });
  });

  test('with --json, serve that cannot start (a bad setting) exits 1 with one JSON object on stderr', async () => {
    const run = await runKeyfleet({ DATA_DIR: dataDir, PORT: 'abc' }, 'serve', '--json');

    assert.equal(run.exitCode, 1);
    assert.deepEqual(JSON.parse(run.stderr), { error: { code: 'failed', message: 'PORT: expected an integer, got "abc"' } });
  });

  test('every command takes --json', async () => {
    const program = new Command('keyfleet');
    const files = fs.readdirSync('src/cli').filter((file) => file.endsWith('.ts') && !['main.ts', 'commands.ts', 'context.ts', 'rollout-common.ts'].includes(file));
    for (const file of files) ((await import(`../../src/cli/${file}`)) as { register(program: Command): void }).register(program);
    const leaves = (command: Command): Command[] => (command.commands.length === 0 ? [command] : command.commands.flatMap(leaves));
    const name = (command: Command): string => (command.parent ? `${name(command.parent)} ${command.name()}` : command.name());

    const commands = leaves(program);

    assert.ok(commands.length >= 24, `only ${commands.length} commands found`);
    assert.deepEqual(commands.filter((command) => !command.options.some((option) => option.long === '--json')).map(name), []);
  });
});

forEachDatabase('keyfleet list commands', (kind) => {
  let store: TestStore;
  let apiKey: string;
  before(async () => {
    store = await openTestStore(kind);
    for (const customer of ['acme', 'globex']) await keyfleet('customer', 'create', customer);
    const created = await keyfleet('apikey', 'create', '--customer', 'acme', '--label', 'app', '--json');
    apiKey = (JSON.parse(created.stdout) as { key: string }).key;
    await keyfleet('apikey', 'create', '--customer', 'globex', '--json');
    await keyfleet('cert', 'create', '--customer', 'globex', '--name', 'globex-main', '--json');
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);

  test('customer list prints every customer, by name', async () => {
    const json = await keyfleet('customer', 'list', '--json');
    const text = await keyfleet('customer', 'list');

    assert.equal(json.exitCode, 0, json.stderr);
    const { customers } = JSON.parse(json.stdout) as { customers: { id: number; name: string; created_at: string }[] };
    assert.deepEqual(customers.map((customer) => customer.name), ['acme', 'globex']);
    assert.ok(customers.every((customer) => Number.isInteger(customer.id) && !Number.isNaN(Date.parse(customer.created_at))));
    assert.equal(text.stdout, customers.map((customer) => `${customer.id}  ${customer.name}\n`).join(''));
  });

  test('apikey list prints the keys of every customer or of one, never a key itself', async () => {
    const all = await keyfleet('apikey', 'list', '--json');
    const acme = await keyfleet('apikey', 'list', '--customer', 'acme', '--json');
    const text = await keyfleet('apikey', 'list');

    assert.equal(all.exitCode, 0, all.stderr);
    type Listed = { keys: { id: string; customer: string; label: string | null; revoked_at: string | null }[] };
    assert.deepEqual((JSON.parse(all.stdout) as Listed).keys.map((key) => key.customer), ['acme', 'globex']);
    const [listed, ...others] = (JSON.parse(acme.stdout) as Listed).keys;
    assert.deepEqual(others, []);
    assert.equal(listed?.label, 'app');
    assert.equal(listed?.revoked_at, null);
    assert.ok(apiKey.includes(listed!.id));
    for (const output of [all.stdout, acme.stdout, text.stdout]) assert.ok(!output.includes(apiKey.slice(-43)), 'a key was printed');
    assert.match(text.stdout, new RegExp(`^${listed!.id}  acme  active  last used never  app$`, 'm'));
  });

  test('cert list prints the certificates of every customer or of one', async () => {
    const all = await keyfleet('cert', 'list', '--json');
    const acme = await keyfleet('cert', 'list', '--customer', 'acme', '--json');
    const acmeText = await keyfleet('cert', 'list', '--customer', 'acme');

    assert.equal(all.exitCode, 0, all.stderr);
    const [certificate, ...others] = (JSON.parse(all.stdout) as { certificates: { name: string; customer: string; serial: string; not_after: string; imported: boolean }[] }).certificates;
    assert.deepEqual(others, []);
    assert.equal(certificate?.name, 'globex-main');
    assert.equal(certificate?.customer, 'globex');
    assert.equal(certificate?.imported, false);
    assert.ok(Date.parse(certificate!.not_after) > Date.now());
    assert.deepEqual(JSON.parse(acme.stdout), { certificates: [] });
    assert.equal(acmeText.stdout, 'no certificates\n');
  });

  test('a list for a customer that does not exist exits 3', async () => {
    const keys = await keyfleet('apikey', 'list', '--customer', 'nobody', '--json');
    const certificates = await keyfleet('cert', 'list', '--customer', 'nobody');

    assert.equal(keys.exitCode, 3);
    assert.deepEqual(JSON.parse(keys.stderr), { error: { code: 'not_found', message: 'customer nobody not found' } });
    assert.equal(certificates.exitCode, 3);
    assert.equal(certificates.stderr, 'keyfleet: customer nobody not found\n');
  });
});
