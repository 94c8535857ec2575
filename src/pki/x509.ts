// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata API first.
import 'reflect-metadata';
import { X509Certificate, createPrivateKey, createPublicKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const ECDSA_SHA256 = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

/** A certificate and its private key, as made or imported, before it is sealed and stored. */
export interface IssuedCertificate {
  serial: string;
  certificatePem: string;
  /** PKCS#8 PEM. Held in memory only until it is sealed. */
  privateKeyPem: string;
  notAfter: Date;
}

/**
 * 16 random bytes with the top bit clear (a positive serial number, as RFC 5280 asks) and a
 * non-zero first byte, so that the hex is the serial as DER encodes it and parsers print it.
 */
function newSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f || 0x01;
  return bytes.toString('hex');
}

async function generateP256(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function pkcs8Pem(privateKey: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', privateKey));
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

function validity(days: number, now = new Date()): { notBefore: Date; notAfter: Date } {
  // A minute of back-dating tolerates clocks of verifiers that run a little behind.
  return { notBefore: new Date(now.getTime() - 60_000), notAfter: new Date(now.getTime() + days * DAY_MS) };
}

/** A self-signed ECDSA P-256 root CA. */
export async function createRootCertificate(validityDays: number): Promise<IssuedCertificate> {
  const keys = await generateP256();
  const serial = newSerial();
  const { notBefore, notAfter } = validity(validityDays);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial,
    name: 'CN=keyfleet deployment root CA',
    notBefore,
    notAfter,
    signingAlgorithm: ECDSA_SHA256,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { serial, certificatePem: certificate.toString('pem'), privateKeyPem: await pkcs8Pem(keys.privateKey), notAfter };
}

/**
 * A customer intermediate CA signed by the root: it may sign key certificates (digital
 * signature) and, with a path length of 0, no further CA.
 */
export async function createIntermediateCertificate(
  root: { certificatePem: string; privateKey: KeyObject },
  subject: { customer: string; name: string },
  validityDays: number,
): Promise<IssuedCertificate> {
  const rootCertificate = new x509.X509Certificate(root.certificatePem);
  const keys = await generateP256();
  const serial = newSerial();
  const { notBefore, notAfter } = validity(validityDays);
  // Node's key usages list more than TypeScript's DOM type knows (encapsulateBits…); the key is the same object.
  const rootKey = (await webcrypto.subtle.importKey('pkcs8', root.privateKey.export({ type: 'pkcs8', format: 'der' }), EC_P256, false, [
    'sign',
  ])) as CryptoKey;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial,
    subject: `CN=${subject.name}, O=${subject.customer}`,
    issuer: rootCertificate.subject,
    notBefore,
    notAfter,
    signingAlgorithm: ECDSA_SHA256,
    publicKey: keys.publicKey,
    signingKey: rootKey,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(rootCertificate),
    ],
  });
  return { serial, certificatePem: certificate.toString('pem'), privateKeyPem: await pkcs8Pem(keys.privateKey), notAfter };
}

/** True for an elliptic-curve key on P-256 (prime256v1). */
export function isP256(key: KeyObject): boolean {
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

/** Parses an unencrypted PEM private key (PKCS#8 or SEC1) without ever echoing its text. */
export function parsePrivateKeyPem(pem: string): KeyObject | undefined {
  try {
    const key = createPrivateKey({ key: pem, format: 'pem' });
    return key.type === 'private' ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The PEM certificates of a file, in order. */
export function splitCertificatePems(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

export function parseCertificatePem(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

/** True when the private key is the one whose public half the certificate holds. */
export function keyMatchesCertificate(key: KeyObject, certificate: X509Certificate): boolean {
  const fromKey = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const fromCertificate = certificate.publicKey.export({ type: 'spki', format: 'der' });
  return fromKey.equals(fromCertificate);
}

/** PKCS#8 PEM of a private key: the one form that is sealed and stored. */
export function toPkcs8Pem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** A certificate as the audit trail records it: what identifies it and how long it is valid, never its key. */
export function certificateAuditState(certificatePem: string) {
  const certificate = new X509Certificate(certificatePem);
  return {
    subject: certificate.subject,
    serial: certificate.serialNumber.toLowerCase(),
    not_after: new Date(certificate.validTo).toISOString(),
    fingerprint: certificate.fingerprint256,
  };
}
