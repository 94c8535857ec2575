import type { Resolver } from './types.ts';

export const auditUrl: Resolver = (desired, reported) =>
  reported.auditUrl === desired.auditUrl ? undefined : { auditUrl: desired.auditUrl };
