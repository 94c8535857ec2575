import { X509Certificate, verify } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json.ts';
import { KEY_CERTIFICATE_TYPE, type KeyCertificate } from './key-certificate.ts';

/**
 * Offline check of a DLock key certificate against a PEM chain (intermediate, then root), as an
 * SDK does it. Needs no database: only node:crypto and the canonical JSON of RFC 8785.
 */
export type VerifyFailure =
  | 'malformed'
  | 'chain-invalid'
  | 'untrusted-root'
  | 'intermediate-expired'
  | 'issuer-mismatch'
  | 'bad-signature'
  | 'not-yet-valid'
  | 'expired';

export type VerifyResult = { ok: true; certificate: KeyCertificate } | { ok: false; failure: VerifyFailure; reason: string };

export interface VerifyOptions {
  /** Epoch milliseconds to check validity at; default now. */
  now?: number;
  /** PEM of the root the chain must end in (pin it); default: the chain's own self-signed root. */
  trustedRootPem?: string;
}

const fail = (failure: VerifyFailure, reason: string): VerifyResult => ({ ok: false, failure, reason });
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MEMBERS = ['data', 'expires', 'issuer', 'key', 'signature', 'type', 'valid'];
const DATA_MEMBERS = ['certificate_id', 'customer', 'lock_type', 'serial_no'];

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const sameMembers = (value: Record<string, unknown>, names: string[]) => Object.keys(value).sort().join() === names.join();
const decodeBase64 = (text: unknown): Buffer | undefined => (typeof text === 'string' && BASE64.test(text) ? Buffer.from(text, 'base64') : undefined);

/** Reads either form: the JSON object (or its text) or the base64 of the canonical JSON. */
export function parseKeyCertificate(input: unknown): KeyCertificate | string {
  let value = input;
  if (typeof input === 'string') {
    const text = input.trim();
    let json = text;
    if (!text.startsWith('{')) {
      const bytes = decodeBase64(text);
      if (!bytes) return 'neither JSON nor standard base64';
      json = bytes.toString('utf8');
    }
    try {
      value = JSON.parse(json);
    } catch {
      return 'not valid JSON';
    }
  }
  if (!isObject(value) || !sameMembers(value, MEMBERS)) return `expected exactly the members ${MEMBERS.join(', ')}`;
  if (value.type !== KEY_CERTIFICATE_TYPE) return `type: expected "${KEY_CERTIFICATE_TYPE}"`;
  if (typeof value.issuer !== 'string') return 'issuer: expected a string';
  for (const name of ['valid', 'expires'] as const) {
    if (!Number.isSafeInteger(value[name])) return `${name}: expected an integer (epoch seconds)`;
  }
  const data = value.data;
  if (!isObject(data) || !sameMembers(data, DATA_MEMBERS) || DATA_MEMBERS.some((name) => typeof data[name] !== 'string')) {
    return `data: expected the string members ${DATA_MEMBERS.join(', ')}`;
  }
  if (decodeBase64(value.key)?.length !== 16) return 'key: expected base64 of 16 bytes';
  if (decodeBase64(value.signature)?.length !== 64) return 'signature: expected base64 of 64 bytes (IEEE P1363 r||s)';
  return value as unknown as KeyCertificate;
}

function parseChain(chainPem: string): X509Certificate[] | string {
  const pems = chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length < 2) return 'expected a PEM chain of the intermediate, then the root';
  try {
    return pems.map((pem) => new X509Certificate(pem));
  } catch {
    return 'a certificate of the chain does not parse';
  }
}

const timeOf = (certificate: X509Certificate, which: 'validFrom' | 'validTo') => new Date(certificate[which]).getTime();

/** Checks a key certificate in either form; on failure says which check failed and why. */
export function verifyKeyCertificate(input: unknown, chainPem: string, options: VerifyOptions = {}): VerifyResult {
  const now = options.now ?? Date.now();
  const certificate = parseKeyCertificate(input);
  if (typeof certificate === 'string') return fail('malformed', certificate);

  const chain = parseChain(chainPem);
  if (typeof chain === 'string') return fail('chain-invalid', chain);
  const intermediate = chain[0]!;
  const root = chain[chain.length - 1]!;
  if (!root.verify(root.publicKey)) return fail('chain-invalid', 'the last certificate of the chain is not a self-signed root');
  if (options.trustedRootPem !== undefined) {
    const trusted = new X509Certificate(options.trustedRootPem);
    if (trusted.fingerprint256 !== root.fingerprint256) return fail('untrusted-root', 'the chain does not end in the trusted root');
  }
  for (let i = 0; i < chain.length - 1; i++) {
    const [child, parent] = [chain[i]!, chain[i + 1]!];
    if (!parent.ca || !child.checkIssued(parent) || !child.verify(parent.publicKey)) {
      return fail('chain-invalid', `certificate ${i + 1} of the chain is not issued and signed by certificate ${i + 2}`);
    }
  }
  if (!intermediate.ca) return fail('chain-invalid', 'the first certificate of the chain is not a CA certificate');
  for (const link of chain) {
    if (now < timeOf(link, 'validFrom') || now > timeOf(link, 'validTo')) {
      return fail('intermediate-expired', `a chain certificate is outside its validity (${link.validFrom} – ${link.validTo})`);
    }
  }
  const serialOf = (hex: string) => (/^[0-9A-Fa-f]{1,64}$/.test(hex) ? BigInt(`0x${hex}`) : undefined);
  const certificateId = serialOf(certificate.data.certificate_id);
  if (certificateId === undefined || certificateId !== serialOf(intermediate.serialNumber)) {
    return fail('issuer-mismatch', `data.certificate_id ${certificate.data.certificate_id} is not the serial of the chain's intermediate`);
  }

  const { signature, ...unsigned } = certificate;
  const signed = Buffer.from(canonicalJson(unsigned), 'utf8');
  if (!verify('sha256', signed, { key: intermediate.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64'))) {
    return fail('bad-signature', 'the signature does not verify with the intermediate key over the canonical JSON');
  }
  const seconds = Math.floor(now / 1000);
  if (seconds < certificate.valid) return fail('not-yet-valid', `valid from ${certificate.valid}, now ${seconds}`);
  if (seconds >= certificate.expires) return fail('expired', `expired at ${certificate.expires}, now ${seconds}`);
  return { ok: true, certificate };
}
