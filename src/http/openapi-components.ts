import type { TSchema } from 'typebox';
import { AclUserView, AclView } from '../acl/schemas.ts';
import { DlockError, KeyCertificate } from '../dlock/schemas.ts';
import { LatestVersions, ReleaseView } from '../firmware/schemas.ts';
import { FirmwareReference, PollReply } from '../okm/device-schemas.ts';
import { AuditRecordView, DeviceTokenRecord, MessageRecord, OkmRecord, PendingOkmRecord } from '../okm/schemas.ts';
import { ErrorResponse, Pagination } from './schemas.ts';


export { DlockError };

/**
 * The shared schemas the document names under `components.schemas`: wherever a route's schema
 * is one of these (by structure), the document refers to it by name, so that a generated
 * client has one type for it. Request and response schemas stay plain TypeBox objects:
 * Fastify validates and serializes with them unchanged.
 */
export const COMPONENT_SCHEMAS: Record<string, TSchema> = {
  Error: ErrorResponse,
  DlockError,
  Pagination,
  OkmRecord,
  PendingOkmRecord,
  OkmMessage: MessageRecord,
  OkmAuditRecord: AuditRecordView,
  DeviceToken: DeviceTokenRecord,
  Acl: AclView,
  AclUser: AclUserView,
  FirmwareRelease: ReleaseView,
  FirmwareLatestVersions: LatestVersions,
  FirmwareReference,
  PollReply,
  DlockKeyCertificate: KeyCertificate,
};
