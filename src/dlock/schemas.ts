import { Type } from 'typebox';
import { KEY_CERTIFICATE_TYPE } from './key-certificate.ts';

/** A DLock key certificate in its JSON form (contract §7). */
export const KeyCertificate = Type.Object({
  type: Type.Literal(KEY_CERTIFICATE_TYPE),
  issuer: Type.String({ description: 'name of the intermediate certificate that signed it' }),
  valid: Type.Integer({ description: 'not before, epoch seconds' }),
  expires: Type.Integer({ description: 'not after, epoch seconds' }),
  data: Type.Object({
    serial_no: Type.String(),
    lock_type: Type.String(),
    customer: Type.String(),
    certificate_id: Type.String(),
  }),
  key: Type.String({ description: 'the 16-byte lock key, base64' }),
  signature: Type.String({ description: 'base64 ECDSA P-256/SHA-256 signature (IEEE P1363, r‖s) over the RFC 8785 form of the other members' }),
});

const KeyCertificateBase64 = Type.String({ description: 'standard base64 of the UTF-8 RFC 8785 JSON of the whole certificate (`base64: true`)' });

/** The success body of an enrolment and a fetch: the certificate in JSON form, or in base64 form when asked. */
export const KeyCertificateResponse = Type.Object({
  status: Type.Literal(200),
  msg: Type.String(),
  data: Type.Object({ key: Type.Union([KeyCertificate, KeyCertificateBase64]) }),
});

export const CertificateChainResponse = Type.Object({
  status: Type.Literal(200),
  msg: Type.String(),
  data: Type.Object({ chain: Type.String({ description: 'PEM: the intermediate certificate, then the root' }) }),
});
