import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Settings } from '../config/settings.ts';
import type { Customer } from '../customers/repository.ts';
import { findCustomerByName } from '../customers/repository.ts';
import type { Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { IntermediateCertificatesTable } from '../db/schema.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import { badRequest, conflict, notFound } from '../http/errors.ts';
import { open, seal } from '../secrets/sealed-box.ts';
import { sealedColumn } from '../secrets/sealed-columns.ts';
import { ensureRootCa, loadRootPrivateKey } from './root-ca.ts';
import {
  certificateAuditState,
  createIntermediateCertificate,
  isP256,
  keyMatchesCertificate,
  parseCertificatePem,
  parsePrivateKeyPem,
  splitCertificatePems,
  toPkcs8Pem,
  type IssuedCertificate,
} from './x509.ts';
import type { KeyRing } from '../secrets/key-ring.ts';

export const CERTIFICATE_NAME_PATTERN = '^[A-Za-z0-9._-]{1,64}$';
const CERTIFICATE_NAME = new RegExp(CERTIFICATE_NAME_PATTERN);

export interface IntermediateCertificate {
  id: number;
  name: string;
  customerId: number;
  customer: string;
  serial: string;
  certificatePem: string;
  notAfter: number;
  imported: boolean;
}

type PkiSettings = Pick<Settings, 'pkiRootValidityDays' | 'pkiIntermediateValidityDays'>;

/** Ties a sealed intermediate key to its certificate's name and serial: a swapped blob does not open. */
export const intermediateKeyAssociatedData = (name: string, serial: string) => `intermediate:${name}:${serial}`;

export const INTERMEDIATE_PRIVATE_KEYS = sealedColumn({
  table: 'intermediate_certificates',
  column: 'private_key_sealed',
  key: 'name',
  reads: ['name', 'serial'],
  associatedData: (row) => intermediateKeyAssociatedData(row.name as string, row.serial as string),
});

function checkName(name: string): void {
  if (!CERTIFICATE_NAME.test(name)) {
    throw badRequest(`name: expected 1-64 characters of A-Z a-z 0-9 . _ -, got "${name}"`);
  }
}

async function requireCustomer(db: Db, name: string): Promise<Customer> {
  const customer = await findCustomerByName(db, name);
  if (!customer) throw badRequest(`customer: unknown customer ${name}`);
  return customer;
}

/** A certificate ready to be stored: checked, its private key already sealed. */
interface PreparedIntermediate {
  customer: Customer;
  name: string;
  serial: string;
  certificatePem: string;
  privateKeySealed: string;
  notAfter: number;
  imported: boolean;
}

// Sealed here, before any transaction: sealing may re-read the key ring, through a connection of its own.
async function prepared(keyRing: KeyRing, customer: Customer, name: string, issued: IssuedCertificate, imported: boolean): Promise<PreparedIntermediate> {
  return {
    customer,
    name,
    serial: issued.serial,
    certificatePem: issued.certificatePem,
    privateKeySealed: await seal(keyRing, issued.privateKeyPem, intermediateKeyAssociatedData(name, issued.serial)),
    notAfter: issued.notAfter.getTime(),
    imported,
  };
}

async function store(db: Db, certificate: PreparedIntermediate): Promise<IntermediateCertificate> {
  const inserted = await db
    .insertInto('intermediate_certificates')
    .values({
      name: certificate.name,
      customer_id: certificate.customer.id,
      serial: certificate.serial,
      certificate_pem: certificate.certificatePem,
      private_key_sealed: certificate.privateKeySealed,
      not_after: certificate.notAfter,
      imported: certificate.imported ? 1 : 0,
      created_at: Date.now(),
    })
    .onConflict((oc) => oc.column('name').doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) throw conflict(`certificate ${certificate.name} already exists`);
  return {
    id: inserted.id,
    name: certificate.name,
    customerId: certificate.customer.id,
    customer: certificate.customer.name,
    serial: certificate.serial,
    certificatePem: certificate.certificatePem,
    notAfter: certificate.notAfter,
    imported: certificate.imported,
  };
}

/** Stores the certificate with its audit entry, in one transaction. */
function storeRecorded(db: Db, certificate: PreparedIntermediate, source: ChangeSource, action: 'certificate.created' | 'certificate.imported'): Promise<IntermediateCertificate> {
  return db.transaction().execute(async (trx) => {
    const stored = await store(trx, certificate);
    await recordChange(trx, source, {
      action,
      customer: stored.customer,
      entity: { type: 'certificate', id: stored.name },
      after: { name: stored.name, customer: stored.customer, ...certificateAuditState(stored.certificatePem) },
    });
    return stored;
  });
}

/** A new P-256 key and an intermediate certificate for it, signed by the deployment root. */
async function issueIntermediate(db: Db, keyRing: KeyRing, settings: PkiSettings, request: { customer: string; name: string }): Promise<PreparedIntermediate> {
  checkName(request.name);
  const customer = await requireCustomer(db, request.customer);
  await ensureRootCa(db, keyRing, settings.pkiRootValidityDays);
  if (await findIntermediate(db, request.name)) throw conflict(`certificate ${request.name} already exists`);
  const { root, privateKey } = await loadRootPrivateKey(db, keyRing);
  const issued = await createIntermediateCertificate(
    { certificatePem: root.certificatePem, privateKey },
    { customer: customer.name, name: request.name },
    settings.pkiIntermediateValidityDays,
  );
  return prepared(keyRing, customer, request.name, issued, false);
}

/** Makes a new P-256 key and an intermediate certificate for it, signed by the deployment root. */
export async function createIntermediate(
  db: Db,
  keyRing: KeyRing,
  settings: PkiSettings,
  request: { customer: string; name: string },
): Promise<IntermediateCertificate> {
  return store(db, await issueIntermediate(db, keyRing, settings, request));
}

/** createIntermediate with its audit entry (certificate.created), committed with the certificate. */
export async function createIntermediateRecorded(
  db: Db,
  keyRing: KeyRing,
  settings: PkiSettings,
  request: { customer: string; name: string },
  source: ChangeSource,
): Promise<IntermediateCertificate> {
  return storeRecorded(db, await issueIntermediate(db, keyRing, settings, request), source, 'certificate.created');
}

/**
 * Checks an intermediate made elsewhere (signed offline with the root's key). Accepted: a
 * PEM file with the intermediate certificate, optionally followed by the deployment root
 * itself; an unencrypted PEM private key (PKCS#8 or SEC1). The certificate must be an
 * unexpired ECDSA P-256 CA certificate issued and signed by the deployment root, and the key
 * its private half.
 */
async function checkedImport(
  db: Db,
  keyRing: KeyRing,
  settings: PkiSettings,
  request: { customer: string; name: string; certificateText: string; keyText: string },
): Promise<PreparedIntermediate> {
  checkName(request.name);
  const customer = await requireCustomer(db, request.customer);
  const root = await ensureRootCa(db, keyRing, settings.pkiRootValidityDays);
  const rootCertificate = new X509Certificate(root.certificatePem);

  const pems = splitCertificatePems(request.certificateText);
  if (pems.length === 0) throw badRequest('--cert: no PEM certificate found');
  const certificate = parseCertificatePem(pems[0]!);
  if (!certificate) throw badRequest('--cert: not a valid X.509 certificate');
  for (const extra of pems.slice(1)) {
    if (parseCertificatePem(extra)?.fingerprint256 !== rootCertificate.fingerprint256) {
      throw badRequest('--cert: after the intermediate, the file may hold only the deployment root certificate');
    }
  }
  if (!isP256(certificate.publicKey)) throw badRequest('--cert: the certificate key is not ECDSA P-256');
  if (!certificate.ca) throw badRequest('--cert: the certificate is not a CA (basicConstraints cA is not set)');
  if (!certificate.checkIssued(rootCertificate) || !certificate.verify(rootCertificate.publicKey)) {
    throw badRequest('--cert: the certificate is not signed by the deployment root CA');
  }
  if (Date.parse(certificate.validTo) <= Date.now()) throw badRequest('--cert: the certificate has expired');

  const key = parsePrivateKeyPem(request.keyText);
  if (!key) throw badRequest('--key: not an unencrypted PEM private key');
  if (!isP256(key)) throw badRequest('--key: the private key is not ECDSA P-256');
  if (!keyMatchesCertificate(key, certificate)) throw badRequest('--key: the private key does not match the certificate');

  if (await findIntermediate(db, request.name)) throw conflict(`certificate ${request.name} already exists`);
  const issued: IssuedCertificate = {
    serial: certificate.serialNumber.toLowerCase(),
    certificatePem: certificate.toString(),
    privateKeyPem: toPkcs8Pem(key),
    notAfter: new Date(certificate.validTo),
  };
  return prepared(keyRing, customer, request.name, issued, true);
}

/** Imports an intermediate made elsewhere (see checkedImport for what is accepted). */
export async function importIntermediate(
  db: Db,
  keyRing: KeyRing,
  settings: PkiSettings,
  request: { customer: string; name: string; certificateText: string; keyText: string },
): Promise<IntermediateCertificate> {
  return store(db, await checkedImport(db, keyRing, settings, request));
}

/** importIntermediate with its audit entry (certificate.imported), committed with the certificate. */
export async function importIntermediateRecorded(
  db: Db,
  keyRing: KeyRing,
  settings: PkiSettings,
  request: { customer: string; name: string; certificateText: string; keyText: string },
  source: ChangeSource,
): Promise<IntermediateCertificate> {
  return storeRecorded(db, await checkedImport(db, keyRing, settings, request), source, 'certificate.imported');
}

/** Looks a certificate up by name across the deployment (names are unique globally). */
type IntermediateRow = Omit<Selectable<IntermediateCertificatesTable>, 'private_key_sealed' | 'created_at'> & { customer: string };

const intermediateQuery = precompiledQuery<IntermediateRow, [string]>(1, (db, [name]) =>
  db
    .selectFrom('intermediate_certificates as c')
    .innerJoin('customers', 'customers.id', 'c.customer_id')
    .select(['c.id', 'c.name', 'c.customer_id', 'customers.name as customer', 'c.serial', 'c.certificate_pem', 'c.not_after', 'c.imported'])
    .where('c.name', '=', name as string),
);

export async function findIntermediate(db: Db, name: string): Promise<IntermediateCertificate | undefined> {
  const [row] = (await intermediateQuery(db, name)).rows;
  return (
    row && {
      id: row.id,
      name: row.name,
      customerId: row.customer_id,
      customer: row.customer,
      serial: row.serial,
      certificatePem: row.certificate_pem,
      notAfter: Number(row.not_after),
      imported: row.imported === 1,
    }
  );
}

/** The PEM chain of a certificate: the intermediate, then the root. */
export async function exportChain(db: Db, name: string): Promise<{ certificate: IntermediateCertificate; chainPem: string }> {
  const certificate = await findIntermediate(db, name);
  if (!certificate) throw notFound(`certificate ${name} not found`);
  const root = await db.selectFrom('pki_root').select('certificate_pem').executeTakeFirstOrThrow();
  const chainPem = [certificate.certificatePem, root.certificate_pem].map((pem) => `${pem.trim()}\n`).join('');
  return { certificate, chainPem };
}

/** The intermediate's private key for signing key certificates, opened from its sealed form. */
export async function loadIntermediatePrivateKey(db: Db, keyRing: KeyRing, name: string): Promise<KeyObject> {
  const row = await db.selectFrom('intermediate_certificates').select(['serial', 'private_key_sealed']).where('name', '=', name).executeTakeFirst();
  if (!row) throw notFound(`certificate ${name} not found`);
  return createPrivateKey(await open(keyRing, row.private_key_sealed, intermediateKeyAssociatedData(name, row.serial)));
}

/**
 * Unsealed signing keys by certificate name and serial. Unsealing and parsing a key cost more
 * than the rest of an enrolment; a certificate's key never changes and a replacement has a new
 * serial, so an entry stays correct whatever other processes do. One entry per intermediate.
 */
const signingKeys = new Map<string, KeyObject>();

const sealedKeyQuery = precompiledQuery<{ private_key_sealed: string }, [string, string]>(2, (db, [name, serial]) =>
  db.selectFrom('intermediate_certificates').select('private_key_sealed').where('name', '=', name as string).where('serial', '=', serial as string),
);

/** The private key of a certificate found with findIntermediate, unsealed once per process. */
export async function intermediateSigningKey(db: Db, keyRing: KeyRing, certificate: Pick<IntermediateCertificate, 'name' | 'serial'>): Promise<KeyObject> {
  const cacheKey = `${certificate.name}\n${certificate.serial}`;
  let key = signingKeys.get(cacheKey);
  if (!key) {
    const [row] = (await sealedKeyQuery(db, certificate.name, certificate.serial)).rows;
    if (!row) throw notFound(`certificate ${certificate.name} not found`);
    key = createPrivateKey(await open(keyRing, row.private_key_sealed, intermediateKeyAssociatedData(certificate.name, certificate.serial)));
    signingKeys.set(cacheKey, key);
  }
  return key;
}
