import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import SQLite from 'better-sqlite3';
import { checkpointInBackground } from '../../src/db/dialects/sqlite-checkpointer.ts';

test('WAL frames are checkpointed by the background worker, not by the committing connection', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-checkpoint-'));
  const file = path.join(dir, 'db.sqlite');
  const database = new SQLite(file);
  try {
    database.pragma('journal_mode = WAL');
    database.pragma('synchronous = NORMAL');
    checkpointInBackground(database, file);
    assert.equal(database.pragma('wal_autocheckpoint', { simple: true }), 4000);
    database.exec('create table t (id integer primary key, value text)');
    const insert = database.prepare('insert into t (value) values (?)');
    database.transaction(() => {
      for (let index = 0; index < 2000; index++) insert.run('x'.repeat(500));
    })();

    // Far below the serving connection's automatic checkpoint, the worker copies the frames
    // into the database file within milliseconds.
    const written = () => fs.statSync(file).size > 1_000_000;
    for (let attempt = 0; attempt < 300 && !written(); attempt++) await sleep(10);
    assert.ok(written(), `database file has ${fs.statSync(file).size} bytes`);
    assert.equal((database.prepare('select count(*) as n from t').get() as { n: number }).n, 2000);
  } finally {
    database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('when the database is closed, the worker has closed its connection first, so no WAL file is left behind', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-checkpoint-'));
  const file = path.join(dir, 'db.sqlite');
  try {
    for (const pause of [0, 50]) {
      const database = new SQLite(file);
      database.pragma('journal_mode = WAL');
      checkpointInBackground(database, file);
      database.exec('create table if not exists t (id integer primary key)');
      await sleep(pause);

      database.close();

      assert.deepEqual(fs.readdirSync(dir), ['db.sqlite'], `after a pause of ${pause} ms`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the worker runs when the process treats evaluated code as ES modules (--input-type=module)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-checkpoint-'));
  try {
    const script = `
      const { default: SQLite } = await import('better-sqlite3');
      const { checkpointInBackground } = await import(${JSON.stringify(path.resolve(import.meta.dirname, '../../src/db/dialects/sqlite-checkpointer.ts'))});
      const file = ${JSON.stringify(path.join(dir, 'db.sqlite'))};
      const database = new SQLite(file);
      database.pragma('journal_mode = WAL');
      checkpointInBackground(database, file);
      await new Promise((resolve) => setTimeout(resolve, 500));
      console.log(database.pragma('wal_autocheckpoint', { simple: true }));
      database.close();
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
    // A worker that failed to start leaves the serving connection on SQLite's default (1 000 pages).
    assert.equal(child.stdout.trim(), '4000', child.stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
