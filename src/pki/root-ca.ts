import type { KeyObject } from 'node:crypto';
import { createPrivateKey } from 'node:crypto';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import { badRequest, conflict } from '../http/errors.ts';
import { open, seal } from '../secrets/sealed-box.ts';
import { sealedColumn } from '../secrets/sealed-columns.ts';
import {
  certificateAuditState,
  createRootCertificate,
  isP256,
  keyMatchesCertificate,
  parseCertificatePem,
  parsePrivateKeyPem,
  splitCertificatePems,
  toPkcs8Pem,
  type IssuedCertificate,
} from './x509.ts';
import type { KeyRing } from '../secrets/key-ring.ts';

/** The single row of pki_root. */
const ROOT_SLOT = 'deployment';

export interface RootCa {
  serial: string;
  certificatePem: string;
  imported: boolean;
}

/** The associated data that ties a sealed root key to the root certificate it belongs to. */
export const rootKeyAssociatedData = (serial: string) => `pki-root:${serial}`;

export const ROOT_PRIVATE_KEY = sealedColumn({
  table: 'pki_root',
  column: 'private_key_sealed',
  key: 'serial',
  reads: ['serial'],
  associatedData: (row) => rootKeyAssociatedData(row.serial as string),
});

/** A root ready to be stored, its private key sealed (before any transaction: sealing may re-read the key ring). */
interface SealedRoot {
  serial: string;
  certificatePem: string;
  privateKeySealed: string;
}

const sealedRoot = async (keyRing: KeyRing, issued: IssuedCertificate): Promise<SealedRoot> => ({
  serial: issued.serial,
  certificatePem: issued.certificatePem,
  privateKeySealed: await seal(keyRing, issued.privateKeyPem, rootKeyAssociatedData(issued.serial)),
});

async function insertRootIfAbsent(db: Db, root: SealedRoot, imported: boolean): Promise<boolean> {
  const inserted = await db
    .insertInto('pki_root')
    .values({
      slot: ROOT_SLOT,
      serial: root.serial,
      certificate_pem: root.certificatePem,
      private_key_sealed: root.privateKeySealed,
      imported: imported ? 1 : 0,
      created_at: Date.now(),
    })
    .onConflict((oc) => oc.column('slot').doNothing())
    .returning('slot')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function findRootCa(db: Db): Promise<RootCa | undefined> {
  const row = await db.selectFrom('pki_root').select(['serial', 'certificate_pem', 'imported']).where('slot', '=', ROOT_SLOT).executeTakeFirst();
  return row && { serial: row.serial, certificatePem: row.certificate_pem, imported: row.imported === 1 };
}

/**
 * The deployment root CA, made on first use. Processes starting together may each make a
 * candidate; the primary key admits one insert, the others do nothing, and every process
 * reads back the stored root.
 */
export async function ensureRootCa(db: Db, keyRing: KeyRing, validityDays: number): Promise<RootCa> {
  const existing = await findRootCa(db);
  if (existing) return existing;
  await insertRootIfAbsent(db, await sealedRoot(keyRing, await createRootCertificate(validityDays)), false);
  const stored = await findRootCa(db);
  if (!stored) throw new Error('the deployment root CA could not be stored');
  return stored;
}

/** The root's private key, opened from its sealed form. Never logged, never returned by the API. */
export async function loadRootPrivateKey(db: Db, keyRing: KeyRing): Promise<{ root: RootCa; privateKey: KeyObject }> {
  const row = await db.selectFrom('pki_root').selectAll().where('slot', '=', ROOT_SLOT).executeTakeFirst();
  if (!row) throw new Error('no deployment root CA: ensureRootCa has not run on this database');
  const privateKey = createPrivateKey(await open(keyRing, row.private_key_sealed, rootKeyAssociatedData(row.serial)));
  return { root: { serial: row.serial, certificatePem: row.certificate_pem, imported: row.imported === 1 }, privateKey };
}

/**
 * Checks an existing root CA (an operator's offline root): the certificate must be a
 * self-signed, unexpired ECDSA P-256 CA and the key its private half.
 */
async function checkedRoot(keyRing: KeyRing, certificateText: string, keyText: string): Promise<SealedRoot> {
  const pems = splitCertificatePems(certificateText);
  if (pems.length !== 1) throw badRequest(`--cert: expected one PEM certificate, found ${pems.length}`);
  const certificate = parseCertificatePem(pems[0]!);
  if (!certificate) throw badRequest('--cert: not a valid X.509 certificate');
  if (!isP256(certificate.publicKey)) throw badRequest('--cert: the certificate key is not ECDSA P-256');
  if (!certificate.ca) throw badRequest('--cert: the certificate is not a CA (basicConstraints cA is not set)');
  if (!certificate.checkIssued(certificate) || !certificate.verify(certificate.publicKey)) {
    throw badRequest('--cert: a root CA must be self-signed');
  }
  if (Date.parse(certificate.validTo) <= Date.now()) throw badRequest('--cert: the certificate has expired');
  const key = parsePrivateKeyPem(keyText);
  if (!key) throw badRequest('--key: not an unencrypted PEM private key');
  if (!keyMatchesCertificate(key, certificate)) throw badRequest('--key: the private key does not match the certificate');
  const serial = certificate.serialNumber.toLowerCase();
  return sealedRoot(keyRing, { serial, certificatePem: certificate.toString(), privateKeyPem: toPkcs8Pem(key), notAfter: new Date(certificate.validTo) });
}

/** Only before the deployment has a root: replacing one would orphan every intermediate it signed. */
async function insertImportedRoot(db: Db, root: SealedRoot): Promise<RootCa> {
  if (!(await insertRootIfAbsent(db, root, true))) {
    throw conflict('the deployment already has a root CA; a root can only be imported before the first start');
  }
  return { serial: root.serial, certificatePem: root.certificatePem, imported: true };
}

/** Imports an existing root CA (see checkedRoot), only before the deployment has one. */
export async function importRootCa(db: Db, keyRing: KeyRing, certificateText: string, keyText: string): Promise<RootCa> {
  return insertImportedRoot(db, await checkedRoot(keyRing, certificateText, keyText));
}

/** importRootCa with its audit entry (certificate.root_imported, the entity named by the root's serial), committed with the root. */
export async function importRootCaRecorded(db: Db, keyRing: KeyRing, certificateText: string, keyText: string, source: ChangeSource): Promise<RootCa> {
  const root = await checkedRoot(keyRing, certificateText, keyText);
  return db.transaction().execute(async (trx) => {
    const imported = await insertImportedRoot(trx, root);
    await recordChange(trx, source, {
      action: 'certificate.root_imported',
      customer: null,
      entity: { type: 'certificate', id: imported.serial },
      after: certificateAuditState(imported.certificatePem),
    });
    return imported;
  });
}
