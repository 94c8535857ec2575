import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { isDatabaseUnavailable, isTransactionConflict } from '../../src/db/connection-errors.ts';

const withCode = (code: string, message = 'driver error') => Object.assign(new Error(message), { code });

describe('which database failures mean the database is unavailable (a 503), from the drivers\' own codes', () => {
  const unavailable = [
    // PostgreSQL, by class: connection exception, authorization, resources, operator intervention, system error
    '08000', '08003', '08006', '08001', '08P01', '28000', '28P01', '53000', '53100', '53200', '53300', '53400',
    '57000', '57014', '57P01', '57P02', '57P03', '57P04', '57P05', '58000', '58030',
    // PostgreSQL, single codes: no connections allowed, database gone, a standby, idle in transaction
    '55000', '3D000', '25006', '25P03',
    // SQLite, primary and extended codes
    'SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT', 'SQLITE_LOCKED', 'SQLITE_LOCKED_SHAREDCACHE', 'SQLITE_IOERR',
    'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_CANTOPEN', 'SQLITE_CANTOPEN_ISDIR', 'SQLITE_FULL', 'SQLITE_PROTOCOL', 'SQLITE_NOMEM',
    // sockets
    'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND',
  ];
  const faultsOfTheRequestOrTheCode = [
    '23505', '23503', '23502', '22P02', '22003', '42P01', '42703', '42601', '40001', '40P01', '55P03', '0A000', 'XX000', 'XX001',
    'SQLITE_CONSTRAINT', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CORRUPT', 'SQLITE_ERROR', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG', 'SQLITE_BUSYNESS',
    'ERR_ASSERTION',
  ];

  test('every code of an outage is unavailable, on its own and as the cause of another error', () => {
    const missed = unavailable.filter((code) => !isDatabaseUnavailable(withCode(code)) || !isDatabaseUnavailable(new Error('query failed', { cause: withCode(code) })));

    assert.deepEqual(missed, []);
  });

  test('a constraint, a syntax error, a lost race or corruption is not: those are the request\'s or the code\'s', () => {
    const misread = faultsOfTheRequestOrTheCode.filter((code) => isDatabaseUnavailable(withCode(code)));

    assert.deepEqual(misread, []);
  });

  test('node-postgres\'s own errors without a code are read from their message', () => {
    assert.ok(isDatabaseUnavailable(new Error('Connection terminated unexpectedly')));
    assert.ok(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect')));
    assert.ok(!isDatabaseUnavailable(new Error('relation "okms" does not exist')));
  });

  test('a lost race is a transaction conflict, to be run again, not an outage', () => {
    for (const code of ['40001', '40P01', '55P03']) {
      assert.ok(isTransactionConflict(withCode(code)), code);
      assert.ok(!isDatabaseUnavailable(withCode(code)), code);
    }
  });

  test('for any code, the classification never throws, and anything but an Error is not an outage', () => {
    fc.assert(
      fc.property(fc.string(), fc.anything(), (code, value) => {
        isDatabaseUnavailable(withCode(code));
        return !isDatabaseUnavailable(value) || value instanceof Error;
      }),
    );
  });
});
