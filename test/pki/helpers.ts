import fs from 'node:fs';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import type { Db } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import type { DatabaseKind } from '../helpers/databases.ts';

/**
 * The forms in which a private key could leak: the raw scalar (bytes, hex, base64,
 * base64url, as in a JWK's `d`), its PKCS#8 DER, and every line of its PKCS#8 and SEC1 PEM.
 */
export function privateKeyForms(key: KeyObject): { bytes: Buffer[]; texts: string[] } {
  const d = Buffer.from(key.export({ format: 'jwk' }).d!, 'base64url');
  const pkcs8 = key.export({ type: 'pkcs8', format: 'der' });
  const pemLines = [key.export({ type: 'pkcs8', format: 'pem' }), key.export({ type: 'sec1', format: 'pem' })]
    .flatMap((pem) => pem.toString().split('\n'))
    .filter((line) => line.length > 16 && !line.startsWith('-----'));
  return {
    bytes: [d, pkcs8],
    texts: [d.toString('hex'), d.toString('base64'), d.toString('base64url'), pkcs8.toString('base64'), ...pemLines],
  };
}

/**
 * What the database holds, as bytes: on SQLite every file in the data directory but the
 * master key (the database, its WAL and shared memory); on PostgreSQL the rows of the
 * tables named.
 */
export async function storedBytes(kind: DatabaseKind, db: Db, dataDir: string, tables: Array<keyof Database>): Promise<Buffer> {
  if (kind === 'sqlite') {
    return Buffer.concat(
      fs
        .readdirSync(dataDir)
        .filter((file) => file.startsWith('keyfleet.sqlite'))
        .map((file) => fs.readFileSync(path.join(dataDir, file))),
    );
  }
  const rows = await Promise.all(tables.map((table) => db.selectFrom(table).selectAll().execute()));
  return Buffer.from(JSON.stringify(rows));
}

/** The forms of the key that occur in the haystack (an empty list is the wanted answer). */
export function leakedForms(haystack: Buffer, key: KeyObject): string[] {
  const { bytes, texts } = privateKeyForms(key);
  return [
    ...bytes.filter((form) => haystack.includes(form)).map((form) => `bytes:${form.length}`),
    ...texts.filter((form) => haystack.includes(Buffer.from(form))).map((form) => `text:${form.slice(0, 8)}…`),
  ];
}
