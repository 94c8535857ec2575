import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
import type { TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';

export { call, createOkm, devicePoll, OKMS } from '../okm/admin-helpers.ts';

export const ACLS = '/api/v1/acls';

export const ALL_ACL_SCOPES = ['acl:read', 'acl:create', 'acl:delete'];

export interface AclUserBody {
  user_id: number;
  pin_hash: string;
  auth_time: number;
  sounder: boolean;
  sounder_delay: number;
  sounder_duration: number;
  sounder_volume: number;
  permissions: number[];
}

export interface AclBodyFixture {
  id?: string;
  customer: string;
  users: AclUserBody[];
  locks: string[];
  user_data?: unknown;
  okm_id?: string | null;
  name?: string | null;
}

export function aclUser(userId: number, permissions: number[]): AclUserBody {
  return {
    user_id: userId,
    pin_hash: `pin${userId}hash`,
    auth_time: 8,
    sounder: false,
    sounder_delay: 10,
    sounder_duration: 30,
    sounder_volume: 2,
    permissions,
  };
}

/** A valid ACL of the customer: users × locks, with a fresh id. */
export function sampleAcl(customer: string, options: { users?: number; locks?: number } = {}): AclBodyFixture & { id: string } {
  const lockCount = options.locks ?? 3;
  const locks = Array.from({ length: lockCount }, (_, index) => `LOCK-${String(index).padStart(4, '0')}`);
  const users = Array.from({ length: options.users ?? 2 }, (_, index) =>
    aclUser(100 + index, locks.map((_, lock) => [0, 1, 17][(index + lock) % 3]!)),
  );
  return { id: randomUUID(), customer, users, locks, user_data: { site: 'north', floors: [1, 2] } };
}

/** Tokens of customers acme and beta, created on the way. */
export async function issueAclTokens(t: TestApp) {
  return {
    acme: await issueTestToken(t, { customer: 'acme', scopes: ALL_ACL_SCOPES }),
    acmeRead: await issueTestToken(t, { customer: 'acme', scopes: ['acl:read'] }),
    beta: await issueTestToken(t, { customer: 'beta', scopes: ALL_ACL_SCOPES }),
    admin: await issueTestToken(t, { scopes: ['admin'] }),
    acmeOkm: await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] }),
  };
}
export type AclTokens = Awaited<ReturnType<typeof issueAclTokens>>;

/** A token of the deployment key with every ACL scope for acme, expired an hour ago. */
export async function expiredAclToken(t: TestApp): Promise<string> {
  const key = await loadActiveSigningKey(t.db, t.app.keyRing);
  return new SignJWT({ sub: 'customer:acme', customer: 'acme', scope: ALL_ACL_SCOPES.join(' ') })
    .setProtectedHeader({ alg: key.algorithm, kid: key.kid })
    .setIssuer(t.settings.jwtIssuer)
    .setAudience(t.settings.jwtAudience)
    .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
    .sign(key.privateKey);
}
