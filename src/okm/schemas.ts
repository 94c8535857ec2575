import { Type, type Static } from 'typebox';
import { FIRMWARE_VERSION_PATTERN } from '../firmware/version.ts';
import { badRequest } from '../http/errors.ts';
import { AsSent } from '../http/json-texts.ts';
import { DIVIDING_STATES, FLEET_STATES, SUMMARY_STATES } from './fleet-states.ts';
import { customerPageQueryProperties } from '../http/request-schemas.ts';
import { FreeText, IsoTime, Nullable } from '../http/schemas.ts';
import { CUSTOMER_NAME_PATTERN, isSerialNumber, SERIAL_NUMBER_PATTERN } from '../shared/identifiers.ts';
import { MAX_STATUS_URL_LENGTH } from '../webhooks/endpoints-schemas.ts';

/** Where no request schema checks it (the CLI): 400 unless it is a valid serial number. */
export function checkSerialNumber(value: string): void {
  if (!isSerialNumber(value)) throw badRequest(`serial number: expected 1–64 characters of A–Z, a–z, 0–9, ".", "_" or "-", got "${value}"`);
}

export const MAX_ASSETS = 1000;
export const MAX_USERS_ASSETS = 5000;
export const MAX_STATUS_URLS = 10;
export const MAX_MESSAGE_PAYLOAD_BYTES = 64 * 1024;

/** Record fields that a body may not set; they are reported by the device or kept by keyfleet. */
export const READ_ONLY_OKM_FIELDS = [
  'serial_number',
  'customer',
  'effective_polling_interval',
  'reported',
  'install_code',
  'last_sync_time',
  'last_ip',
  'firmware_version',
  'last_correction',
  'device_token_issued_at',
  'overdue',
  'stuck',
  'created_at',
  'updated_at',
] as const;


const CacheMode = Type.Enum([1, 2], { description: '1 = disabled, 2 = enabled' });
const CheckoutContact = Type.Enum(['open', 'closed']);
const CheckoutTime = Type.Integer({ minimum: 0, maximum: 86400, description: 'seconds' });
const AssetList = Type.Array(Type.String({ pattern: SERIAL_NUMBER_PATTERN }), { maxItems: MAX_ASSETS, uniqueItems: true });
const UsersAssets = Type.Array(Type.Object({}, { additionalProperties: true }), {
  maxItems: MAX_USERS_ASSETS,
  description: 'JSON objects, stored and returned as sent; no name twice in one object (devices could read either value)',
});
const PollingInterval = Type.Integer({ minimum: 5, maximum: 3600, description: 'seconds' });
const FirmwareVersion = Type.String({ pattern: FIRMWARE_VERSION_PATTERN });
const StatusUrls = Type.Array(Type.String({ format: 'uri', maxLength: MAX_STATUS_URL_LENGTH, description: 'http or https URL' }), {
  maxItems: MAX_STATUS_URLS,
  uniqueItems: true,
});
const CustomerName = Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: '1–64 characters of A-Z a-z 0-9 . _ -' });

export const MessageListQuery = Type.Object(
  {
    ...customerPageQueryProperties,
    pending: Type.Optional(Type.Boolean({ description: 'only the messages not delivered yet (true), or only those delivered (false)' })),
  },
  { additionalProperties: false },
);
export type MessageListQuery = Static<typeof MessageListQuery>;

/** What picks an OKM's audit records: the order, and when keyfleet received them. */
const auditRecordFilterProperties = {
  customer: customerPageQueryProperties.customer,
  order: Type.Optional(
    Type.Enum(['oldest_first', 'newest_first'], { default: 'oldest_first', description: 'oldest_first (the default): the order they arrived in; newest_first: the last one first' }),
  ),
  since: Type.Optional({ ...IsoTime, description: 'records received at or after this time' }),
  until: Type.Optional({ ...IsoTime, description: 'records received before this time' }),
};

export const AuditRecordListQuery = Type.Object({ ...auditRecordFilterProperties, ...customerPageQueryProperties }, { additionalProperties: false });
export type AuditRecordListQuery = Static<typeof AuditRecordListQuery>;

export const AuditRecordExportQuery = Type.Object(auditRecordFilterProperties, { additionalProperties: false });
export type AuditRecordExportQuery = Static<typeof AuditRecordExportQuery>;

/**
 * The OKM list's query. `correctionNames` are the resolvers' reply keys, which the device
 * protocol defines (admin-routes.ts says how they get here): what last_correction may hold.
 */
export const okmListQuery = (correctionNames: readonly string[]) =>
  Type.Object(
    {
      ...customerPageQueryProperties,
      overdue: Type.Optional(Type.Boolean({ description: 'only OKMs that are (true) or are not (false) overdue' })),
      firmware_version: Type.Optional(FreeText({ minLength: 1, maxLength: 64, description: 'only OKMs that last reported this version' })),
      unassigned: Type.Optional(Type.Boolean({ description: 'admin only: only OKMs that belong to no customer' })),
      state: Type.Optional(
        Type.Enum([...FLEET_STATES], {
          description:
            'only OKMs in this state, as the fleet summary counts them: in_step (the last poll was answered {}), drifting (it was answered with a correction), never_polled; and across those, overdue (polled before but not for 3 effective polling intervals) and stuck (sent the same correction on 3 polls in a row without effect: stuck not null)',
        }),
      ),
      serial_prefix: Type.Optional(Type.String({ pattern: SERIAL_NUMBER_PATTERN, description: 'only OKMs whose serial number begins with this (1–64 characters of A-Z a-z 0-9 . _ -)' })),
      last_correction: Type.Optional(
        Type.Enum(
          [...correctionNames],
          { description: 'only OKMs whose last poll this resolver answered (its reply key, as in last_correction): those the fleet summary counts under it in `corrections`' },
        ),
      ),
      subscriber_url: Type.Optional(
        Type.String({
          format: 'uri',
          pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
          maxLength: MAX_STATUS_URL_LENGTH,
          description: 'only OKMs whose subscribe_urls.status holds this URL, compared exactly as stored',
        }),
      ),
      next_correction: Type.Optional(
        Type.Boolean({
          description: 'true: each OKM also carries next_correction, what its next poll is expected to send (a drift report per OKM: a few more reads for each)',
        }),
      ),
    },
    { additionalProperties: false },
  );
export type OkmListQuery = Static<ReturnType<typeof okmListQuery>>;

/** PUT body: the whole desired configuration; an absent field is "not configured". */
export const OkmSettingsBody = Type.Object(
  {
    cache_mode: Type.Optional(Nullable(CacheMode)),
    key_checkout_window: Type.Optional(
      Nullable(Type.Object({ time: CheckoutTime, contact: CheckoutContact }, { additionalProperties: false })),
    ),
    auditing_enabled: Type.Optional(Type.Boolean()),
    asset_list: Type.Optional(Nullable(AssetList)),
    users_assets: Type.Optional(Nullable(UsersAssets)),
    polling_interval: Type.Optional(Nullable(PollingInterval)),
    firmware: Type.Optional(
      Type.Object(
        {
          kas: Type.Optional(Nullable(FirmwareVersion)),
          batch_key: Type.Optional(Nullable(FirmwareVersion)),
          wireless_key: Type.Optional(Nullable(FirmwareVersion)),
        },
        { additionalProperties: false, description: 'catalog versions pinned for this OKM, overriding the fleet-wide latest' },
      ),
    ),
    subscribe_urls: Type.Optional(Type.Object({ status: Type.Optional(StatusUrls) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
export type OkmSettingsBody = Static<typeof OkmSettingsBody>;

/** PATCH body (RFC 7396 JSON merge patch): every member optional, null removes (unsets) it. */
export const OkmPatchBody = Type.Object(
  {
    cache_mode: Type.Optional(Nullable(CacheMode)),
    key_checkout_window: Type.Optional(
      Nullable(
        Type.Object(
          { time: Type.Optional(Nullable(CheckoutTime)), contact: Type.Optional(Nullable(CheckoutContact)) },
          { additionalProperties: false },
        ),
      ),
    ),
    auditing_enabled: Type.Optional(Nullable(Type.Boolean())),
    asset_list: Type.Optional(Nullable(AssetList)),
    users_assets: Type.Optional(Nullable(UsersAssets)),
    polling_interval: Type.Optional(Nullable(PollingInterval)),
    firmware: Type.Optional(
      Nullable(
        Type.Object(
          {
            kas: Type.Optional(Nullable(FirmwareVersion)),
            batch_key: Type.Optional(Nullable(FirmwareVersion)),
            wireless_key: Type.Optional(Nullable(FirmwareVersion)),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    subscribe_urls: Type.Optional(Nullable(Type.Object({ status: Type.Optional(Nullable(StatusUrls)) }, { additionalProperties: false }))),
  },
  { additionalProperties: false },
);
export type OkmPatchBody = Static<typeof OkmPatchBody>;

/** An OKM's dividing state (src/okm/fleet-states.ts), in the OKM record and the drift report. */
export const OkmState = Type.Enum([...DIVIDING_STATES], {
  description:
    'where the fleet summary counts the OKM and which state= list holds it: never_polled until its first poll (an OKM accepted from pending calls included), then drifting when its last poll was answered with a correction, else in_step',
});

/** The one state to show for an OKM (src/okm/fleet-states.ts summaryStateOf), in the OKM record and the drift report. */
export const OkmSummaryState = Type.Enum([...SUMMARY_STATES], {
  description:
    'the one state to show for the OKM, the first that applies: never_polled; overdue (stopped polling); stuck (does not take a correction, even while the retry policy holds its offer back and its polls are answered {}); drifting; in_step',
});

export const OkmRecord = Type.Object({
  serial_number: Type.String(),
  customer: Nullable(Type.String()),
  cache_mode: Nullable(CacheMode),
  key_checkout_window: Nullable(Type.Object({ time: Type.Integer(), contact: CheckoutContact })),
  auditing_enabled: Type.Boolean(),
  asset_list: Nullable(Type.Array(Type.String())),
  users_assets: Nullable(AsSent(Type.Array(Type.Object({}, { additionalProperties: true }), { description: 'as sent in the PUT or PATCH that set it' }))),
  polling_interval: Nullable(Type.Integer()),
  effective_polling_interval: Type.Integer({ description: 'polling_interval, else the fleet default' }),
  firmware: Type.Object({ kas: Nullable(Type.String()), batch_key: Nullable(Type.String()), wireless_key: Nullable(Type.String()) }),
  subscribe_urls: Type.Object({ status: Type.Array(Type.String()) }),
  acl_id: Nullable(Type.String({ description: 'the linked ACL, whose locks and users are asset_list and users_assets' })),
  reported: Nullable(Type.Record(Type.String(), Type.String(), { description: "the device's query parameters of its last poll" })),
  install_code: Nullable(Type.String()),
  last_sync_time: Nullable(IsoTime),
  last_ip: Nullable(Type.String()),
  firmware_version: Nullable(Type.String()),
  last_correction: Nullable(
    Type.String({ description: 'reply key of the resolver that answered the last poll (e.g. kasFirmware); null: answered {} (in step), or never polled' }),
  ),
  device_token_issued_at: Nullable({ ...IsoTime, description: 'when its current device token was issued; null: it has none' }),
  state: OkmState,
  summary_state: OkmSummaryState,
  overdue: Type.Boolean({ description: 'polled before, but not for 3 × effective_polling_interval' }),
  stuck: {
    ...Nullable(
      Type.Object({
        resolver: Type.String({ description: 'reply key of the resolver whose correction the OKM does not take (e.g. pollingInterval)' }),
        since: Type.Integer({ description: 'when a poll found it stuck, epoch milliseconds' }),
        polls: Type.Integer({ minimum: 0, description: 'its polls, up to the last, that were sent that correction without effect' }),
      }),
    ),
    description:
      'sent one correction on 3 polls in a row (STUCK_AFTER_POLLS) and still reporting the value it was told to change, as of its last poll: a poll clears it once the OKM reports the corrected value or is sent another. null: not stuck',
  },
  created_at: IsoTime,
  updated_at: IsoTime,
  next_correction: Type.Optional(
    Nullable(
      Type.String({
        description:
          "only in the OKM list asked with next_correction=true: the reply key of the correction the next poll is expected to send, the drift report's expected_next; null: none",
      }),
    ),
  ),
});
export type OkmRecord = Static<typeof OkmRecord>;

export const CustomerAssignmentBody = Type.Object(
  { customer: Nullable(CustomerName) },
  { additionalProperties: false },
);
export type CustomerAssignmentBody = Static<typeof CustomerAssignmentBody>;

/** POST …/claim: the installer code the device reports as `installCode` (contract §10). */
export const ClaimBody = Type.Object(
  { install_code: Type.String({ pattern: '^[0-9]{5,20}$', description: 'the installer code the device reported: 5–20 digits' }) },
  { additionalProperties: false },
);
export type ClaimBody = Static<typeof ClaimBody>;

export const MessageBody = Type.Object(
  {
    type: FreeText({ minLength: 1, maxLength: 64 }),
    payload: Type.Optional(
      Type.Unknown({ description: `any JSON value, at most ${MAX_MESSAGE_PAYLOAD_BYTES} bytes of JSON text, no name twice in one object; default null` }),
    ),
  },
  { additionalProperties: false },
);
export type MessageBody = Static<typeof MessageBody>;

export const MessageRecord = Type.Object({
  id: Type.Integer(),
  type: Type.String(),
  payload: AsSent(Type.Unknown({ description: 'as sent' })),
  created_at: IsoTime,
  delivered_at: Nullable(IsoTime),
});
export type MessageRecord = Static<typeof MessageRecord>;

export const AuditRecordView = Type.Object({ id: Type.Integer(), received_at: IsoTime, record: AsSent(Type.Unknown({ description: 'as the OKM sent it' })) });
export type AuditRecordView = Static<typeof AuditRecordView>;

export const PendingOkmRecord = Type.Object({
  serial_number: Type.String(),
  first_seen_at: IsoTime,
  last_seen_at: IsoTime,
  last_ip: Type.String(),
  firmware_version: Nullable(Type.String({ description: 'kasFirmware of its last poll that sent one' })),
  calls: Type.Integer({ description: 'config polls and audit posts so far' }),
});
export type PendingOkmRecord = Static<typeof PendingOkmRecord>;

export const AcceptBody = Type.Object(
  { customer: Type.Optional(CustomerName) },
  { additionalProperties: false, description: 'the customer that gets the OKM; without one it belongs to none yet' },
);
export type AcceptBody = Static<typeof AcceptBody>;

export const DeviceTokenRecord = Type.Object({
  serial_number: Type.String(),
  token: Type.String({ description: 'shown only in this response; the device sends it as Authorization: Bearer <token>' }),
  issued_at: IsoTime,
});
export type DeviceTokenRecord = Static<typeof DeviceTokenRecord>;
