import { Type, type Static } from 'typebox';
import { cursorPageQueryProperties } from '../http/cursor-paging.ts';
import { FreeText, IsoTime, Nullable, paginationQueryProperties } from '../http/schemas.ts';
import { CUSTOMER_NAME_PATTERN, SERIAL_NUMBER_PATTERN } from '../shared/identifiers.ts';

/** A UUID in its hyphenated form, any version, either letter case (stored in lowercase). */
export const UUID_PATTERN = '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';

/** Most bytes of `user_data` JSON text one ACL may carry. */
export const MAX_USER_DATA_BYTES = 64 * 1024;

export const USER_ID_MAX = 999_999_999;
export const AUTH_TIMES = [1, 4, 8, 12, 24] as const;
export const PERMISSIONS = [0, 1, 17] as const;

/** Most characters of an ACL's name, and of the text a name search looks for. */
export const ACL_NAME_MAX_LENGTH = 100;

const AclName = FreeText({ minLength: 1, maxLength: ACL_NAME_MAX_LENGTH, description: 'a short label for people (a site or shop name), not blank' });

export interface AclLimits {
  maxUsers: number;
  maxLocks: number;
}

const CustomerName = Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'customer name' });

const aclUser = (maxLocks: number | undefined) =>
  Type.Object(
    {
      user_id: Type.Integer({ minimum: 0, maximum: USER_ID_MAX, description: 'vendor-assigned user id, at most 9 digits, unique in the ACL' }),
      pin_hash: Type.String({ pattern: '^[A-Za-z0-9]{1,128}$', description: 'PIN hash as the OKM expects it, 1–128 alphanumerics' }),
      auth_time: Type.Enum([...AUTH_TIMES], { description: 'hours the key is valid' }),
      sounder: Type.Boolean({ description: 'Restricted Mode' }),
      sounder_delay: Type.Integer({ minimum: 0, maximum: 120, description: 'seconds' }),
      sounder_duration: Type.Integer({ minimum: 0, maximum: 255, description: 'seconds' }),
      sounder_volume: Type.Enum([0, 1, 2], { description: '0 off, 1 low, 2 normal' }),
      permissions: Type.Array(Type.Enum([...PERMISSIONS]), {
        ...(maxLocks === undefined ? {} : { maxItems: maxLocks }),
        description: 'one per lock, by index: 0 no access, 1 access, 17 dual authentication',
      }),
    },
    { additionalProperties: false },
  );
export type AclUser = Static<ReturnType<typeof aclUser>>;

/** POST and PUT body; the caps come from the settings. */
export const aclBody = (limits: AclLimits) =>
  Type.Object(
    {
      id: Type.Optional(Type.String({ pattern: UUID_PATTERN, description: 'UUID; generated (v4) when absent' })),
      customer: CustomerName,
      users: Type.Array(aclUser(limits.maxLocks), { maxItems: limits.maxUsers }),
      locks: Type.Array(Type.String({ pattern: SERIAL_NUMBER_PATTERN }), {
        maxItems: limits.maxLocks,
        description: 'lock serial numbers, strictly ascending',
      }),
      user_data: Type.Optional(
        Type.Object({}, { additionalProperties: true, description: `free JSON object, at most ${MAX_USER_DATA_BYTES} bytes, returned as sent` }),
      ),
      okm_id: Type.Optional(
        Type.Union([Type.String({ pattern: SERIAL_NUMBER_PATTERN }), Type.Null()], {
          description: 'serial number of the OKM to link; null unlinks; absent keeps the current link',
        }),
      ),
      name: Type.Optional(
        Type.Union([AclName, Type.Null()], {
          description: `the ACL's name, 1–${ACL_NAME_MAX_LENGTH} characters of text; null removes it; absent keeps the current name (none on a new ACL)`,
        }),
      ),
    },
    { additionalProperties: false },
  );
export type AclBody = Static<ReturnType<typeof aclBody>>;

/** A user of an ACL as responses show it: as it was written. */
export const AclUserView = aclUser(undefined);

/** An ACL as responses show it (never with okm_id). */
export const AclView = Type.Object({
  id: Type.String(),
  name: Type.Optional(Type.String({ description: 'the ACL\'s name; absent when it has none' })),
  customer: Type.String(),
  users: Type.Array(AclUserView),
  locks: Type.Array(Type.String()),
  user_data: Type.Optional(Type.Object({}, { additionalProperties: true })),
});

/** GET /api/v1/acl-summaries: an ACL without its lists, for a list of many large ACLs. */
export const AclSummaryView = Type.Object({
  id: Type.String(),
  name: Type.Optional(Type.String({ description: 'the ACL\'s name; absent when it has none' })),
  customer: Type.String(),
  user_count: Type.Integer({ minimum: 0, description: 'number of users' }),
  lock_count: Type.Integer({ minimum: 0, description: 'number of locks' }),
  okm_id: Nullable(Type.String({ description: 'serial number of the linked OKM; null: not linked' })),
  updated_at: { ...IsoTime, description: 'when the ACL was last written' },
  user_data: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'as sent' })),
});

/** GET /api/v1/acls/{id}/okm: the ACL's link, which ACL responses never show (seed: okm_id is request only). */
export const AclOkmView = Type.Object({
  acl_id: Type.String(),
  okm_id: Type.Union([Type.String(), Type.Null()], { description: 'serial number of the linked OKM; null: not linked' }),
});

export const AclParams = Type.Object({ id: Type.String({ pattern: UUID_PATTERN }) }, { additionalProperties: false });
export type AclParams = Static<typeof AclParams>;

export const AclCustomerQuery = Type.Object(
  { customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'the ACL\'s customer' })) },
  { additionalProperties: false },
);
export type AclCustomerQuery = Static<typeof AclCustomerQuery>;

/**
 * What the ACL list and the summaries search by; every one given must hold (AND). Absent: all
 * of the customer's ACLs.
 */
export const aclSearchQueryProperties = {
  user_id: Type.Optional(Type.Integer({ minimum: 0, maximum: USER_ID_MAX, description: 'only the ACLs whose users hold this user_id' })),
  lock: Type.Optional(Type.String({ pattern: SERIAL_NUMBER_PATTERN, description: 'only the ACLs whose locks hold this serial number, ignoring case (door-1 finds DOOR-1)' })),
  name_contains: Type.Optional(
    FreeText({ minLength: 1, maxLength: ACL_NAME_MAX_LENGTH, description: 'only the ACLs whose name holds this text anywhere, ignoring case' }),
  ),
};

export const AclListQuery = Type.Object(
  { customer: Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'whose ACLs to list' }), ...aclSearchQueryProperties, ...paginationQueryProperties },
  { additionalProperties: false },
);
export type AclListQuery = Static<typeof AclListQuery>;

/** The search of a list query: what aclSearchQueryProperties validated. */
export type AclSearch = Pick<AclListQuery, keyof typeof aclSearchQueryProperties>;

/** The summaries are not the list of contract §0.6: they page by cursor, as every list but that one does (contract §5.3). */
export const AclSummaryListQuery = Type.Object(
  {
    customer: Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'whose ACLs to list' }),
    ...aclSearchQueryProperties,
    sort: Type.Optional(
      Type.Enum(['id', 'name'], {
        default: 'id',
        description: 'id (the default): by id, as GET /api/v1/acls orders them; name: by name ignoring case (ties by id), then the ACLs without a name, by id',
      }),
    ),
    ...cursorPageQueryProperties,
  },
  { additionalProperties: false },
);
export type AclSummaryListQuery = Static<typeof AclSummaryListQuery>;
