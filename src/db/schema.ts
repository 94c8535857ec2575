import type { ColumnType, Generated } from 'kysely';

/**
 * Table row types, as stored. Times are epoch milliseconds, booleans are 0/1 and JSON is
 * text on every dialect, so that one migration set serves SQLite and PostgreSQL; the
 * repositories map rows to domain types at the boundary.
 */
export interface Database {
  customers: CustomersTable;
  signing_keys: SigningKeysTable;
  okms: OkmsTable;
  okm_messages: OkmMessagesTable;
  okm_audit_records: OkmAuditRecordsTable;
  pending_okms: PendingOkmsTable;
  firmware_releases: FirmwareReleasesTable;
  firmware_chunks: FirmwareChunksTable;
  fleet_firmware: FleetFirmwareTable;
  pki_root: PkiRootTable;
  intermediate_certificates: IntermediateCertificatesTable;
  api_keys: ApiKeysTable;
  dlock_secret: DlockSecretTable;
  dlocks: DlocksTable;
  acls: AclsTable;
  acl_contents: AclContentsTable;
  acl_users: AclUsersTable;
  acl_locks: AclLocksTable;
  status_events: StatusEventsTable;
  status_delivery_failures: StatusDeliveryFailuresTable;
  webhook_secrets: WebhookSecretsTable;
  data_keys: DataKeysTable;
  okm_claim_failures: OkmClaimFailuresTable;
  okm_claim_customer_failures: OkmClaimCustomerFailuresTable;
  webhook_endpoints: WebhookEndpointsTable;
  fleet_event_deliveries: FleetEventDeliveriesTable;
  rollouts: RolloutsTable;
  rollout_members: RolloutMembersTable;
  okm_polls: OkmPollsTable;
  okm_subscriber_urls: OkmSubscriberUrlsTable;
  fleet_summary_snapshot: FleetSummarySnapshotTable;
  background_passes: BackgroundPassesTable;
  people: PeopleTable;
  role_bindings: RoleBindingsTable;
  sessions: SessionsTable;
  sign_in_attempts: SignInAttemptsTable;
  api_tokens: ApiTokensTable;
  audit_pending: AuditPendingTable;
  audit_entries: AuditEntriesTable;
  audit_chain_head: AuditChainHeadTable;
  audit_checkpoints: AuditCheckpointsTable;
  audit_event_cursor: AuditEventCursorTable;
}

type Id = ColumnType<number, never, never>;

export interface CustomersTable {
  id: Generated<number> & Id;
  name: string;
  created_at: number;
  /** IANA time zone of the customer's stores (maintenance windows of rollouts); null: UTC. */
  time_zone: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON retry policy of firmware offers to this customer's OKMs (contract §15); null: the fleet default. */
  firmware_retry_policy: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SigningKeysTable {
  kid: string;
  algorithm: string;
  public_jwk: string;
  private_jwk_sealed: string;
  created_at: number;
  retired_at: number | null;
}

export interface OkmsTable {
  serial_number: string;
  customer_id: number | null;
  cache_mode: number | null;
  key_checkout_window_time: number | null;
  key_checkout_window_contact: string | null;
  auditing_enabled: number;
  asset_list: string | null;
  asset_list_digest: string | null;
  users_assets: string | null;
  users_assets_digest: string | null;
  polling_interval: number | null;
  kas_firmware: string | null;
  batch_key_firmware: string | null;
  wireless_key_firmware: string | null;
  status_urls: string;
  firmware_version: string | null;
  /** batchKeyFirmware and wirelessKeyFirmware of the last poll (kasFirmware is firmware_version). */
  batch_key_firmware_version: string | null;
  wireless_key_firmware_version: string | null;
  /** Reply key of the resolver that answered the last poll (e.g. kasFirmware); null: it was answered {} or never polled. */
  last_correction: string | null;
  /** Lowercase hex SHA-256 of the OKM's device token; null: none issued. */
  device_token_hash: string | null;
  device_token_issued_at: number | null;
  /** When the fleet pass found the OKM silent (cleared by its next poll); 0: never polled (its first poll clears it). */
  overdue_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** The rollout whose offer applies to this OKM: set when its group starts, cleared once it has updated or the rollout is aborted. */
  rollout_id: ColumnType<number | null, number | null | undefined, number | null>;
  /** Identity of the last poll's correction (a digest of what it told the device); null with last_correction. */
  correction_digest: ColumnType<string | null, string | null | undefined, string | null>;
  /** okm_polls.polls of the first of the polls in a row that were sent the last correction. */
  correction_since_poll: ColumnType<number | null, number | null | undefined, number | null>;
  /** JSON OfferHold: the retry policy's state for a firmware offer the OKM did not take (src/okm/correction-record.ts). */
  offer_hold: ColumnType<string | null, string | null | undefined, string | null>;
  /** The reply key of the resolver the OKM is stuck on (contract §15); null: not stuck. */
  stuck_resolver: ColumnType<string | null, string | null | undefined, string | null>;
  /** When it became stuck, epoch ms. */
  stuck_since: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: number;
  updated_at: number;
}

/**
 * What each poll writes, one narrow row per OKM that has polled (none: never polled), apart
 * from the wide okms row that a steady poll only reads. No index but the key, and the status
 * mark's, which holds only OKMs whose status waits for its fan-out.
 */
export interface OkmPollsTable {
  serial_number: string;
  last_sync_time: number;
  last_ip: string;
  /** JSON object of the values the device reported. */
  reported: string;
  /** The installer code last reported in a valid form; a poll without one keeps it. */
  install_code: string | null;
  /** Set by a poll of an OKM with subscriber URLs: its status is queued, not yet fanned out into status_events rows. */
  status_queued_at: number | null;
  /** How many polls the OKM has made (counted from this column's creation): numbers its polls, for runs of one correction. */
  polls: ColumnType<number, number | undefined, number>;
}

/**
 * Each URL of each OKM's subscribe_urls.status (okms.status_urls), as a row, so that the OKMs
 * of one URL are an index range (okm_subscriber_urls_url_idx). Written with status_urls by the
 * admin write path (src/okm/repository.ts), never by a poll.
 */
export interface OkmSubscriberUrlsTable {
  serial_number: string;
  url: string;
}

export interface OkmMessagesTable {
  id: Generated<number> & Id;
  okm_serial: string;
  type: string;
  payload: string;
  created_at: number;
  delivered_at: number | null;
}

export interface OkmAuditRecordsTable {
  id: Generated<number> & Id;
  okm_serial: string;
  received_at: number;
  record: string;
}

/** Unknown serial numbers that called while auto-enrol is off, until an operator accepts them. */
export interface PendingOkmsTable {
  serial_number: string;
  first_seen_at: number;
  last_seen_at: number;
  last_ip: string;
  firmware_version: string | null;
  /** Config polls and audit posts. */
  call_count: number;
}

export interface FirmwareReleasesTable {
  kind: string;
  version: string;
  url: string | null;
  sha256: string;
  size: number | null;
  created_at: number;
}

export interface FirmwareChunksTable {
  kind: string;
  version: string;
  seq: number;
  data: Buffer;
}

export interface FleetFirmwareTable {
  kind: string;
  version: string;
}

export interface PkiRootTable {
  slot: string;
  serial: string;
  certificate_pem: string;
  /** PKCS#8 PEM sealed under a data key, which the master key wraps (ADR 0021); associated data `pki-root:<serial>`. */
  private_key_sealed: string;
  imported: number;
  created_at: number;
}

export interface IntermediateCertificatesTable {
  id: Generated<number> & Id;
  name: string;
  customer_id: number;
  serial: string;
  certificate_pem: string;
  /** PKCS#8 PEM sealed under a data key (ADR 0021); associated data `intermediate:<name>:<serial>`. */
  private_key_sealed: string;
  not_after: number;
  imported: number;
  created_at: number;
}

export interface ApiKeysTable {
  /** The key's public id (16 hex digits), also part of the key itself. */
  id: string;
  customer_id: number;
  label: string | null;
  /** Lowercase hex SHA-256 of the whole key. */
  secret_hash: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface DlockSecretTable {
  /** Always 'deployment': one row. */
  slot: string;
  /** 32 random bytes (the HKDF salt of lock keys), sealed under a data key (ADR 0021); associated data `dlock-secret`. */
  secret_sealed: string;
  created_at: number;
}

export interface DlocksTable {
  serial_no: string;
  customer_id: number;
  certificate_name: string;
  /** The key certificate as JSON without its `key` member. */
  certificate_json: string;
  /** The lock key (16 bytes), sealed under a data key (ADR 0021); associated data `dlock-key:<serial_no>`. */
  key_sealed: string;
  created_at: number;
}

export interface AclsTable {
  /** Lowercase UUID. */
  id: string;
  customer_id: number;
  /** The OKM whose asset lists this ACL sets; unique, so an OKM has at most one ACL. */
  okm_serial: string | null;
  created_at: number;
  updated_at: number;
  /** The operator's label (migration 0025); null when none was given. */
  name: string | null;
  /** `name` as the name search compares it (aclNameSearchKey); null with it. */
  name_key: string | null;
}

/** One row per user id an ACL's `users` holds (migration 0025), written by the ACL write path only: which ACLs hold a user. */
export interface AclUsersTable {
  acl_id: string;
  customer_id: number;
  user_id: number;
}

/** One row per serial number an ACL's `locks` holds (migration 0025), written by the ACL write path only: which ACLs hold a lock. */
export interface AclLocksTable {
  acl_id: string;
  customer_id: number;
  lock_serial: string;
}

export interface AclContentsTable {
  acl_id: string;
  /** JSON array of user objects, in RFC 8785 canonical form (the linked OKM's user asset list). */
  users: string;
  /** JSON array of lock serial numbers, canonical too (the linked OKM's asset list). */
  locks: string;
  /** The caller's user_data JSON text exactly as sent; null when it sent none. */
  user_data: string | null;
  /** How many users and locks the lists hold (migration 0015), for the summary list. */
  user_count: number;
  lock_count: number;
}

export type StatusEventState = 'pending' | 'delivered' | 'failed' | 'gone';

/**
 * One row per OKM and subscriber URL. 'pending': the OKM's status as now on its row (last
 * sync time, IP, firmware) is to be delivered; 'delivered' / 'failed': what happened to the
 * last one; 'gone': the URL answered 410, nothing more is sent.
 */
export interface StatusEventsTable {
  id: Generated<number> & Id;
  okm_serial: string;
  url: string;
  /** host[:port] of the URL: concurrency is bounded per destination host. */
  host: string;
  state: StatusEventState;
  /** Attempts made so far for this URL since it was last delivered, failed or added. */
  attempts: number;
  next_attempt_at: number;
  /** Set while a dispatcher holds the row; another may take it only after claimed_until. */
  claim_token: string | null;
  claimed_until: number | null;
  /** The `webhook-id` of the last attempt. */
  last_event_id: string | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: number | null;
}

/** The delivery log: every attempt that did not succeed, kept for WEBHOOK_LOG_RETENTION_DAYS. */
export interface StatusDeliveryFailuresTable {
  id: Generated<number> & Id;
  okm_serial: string;
  url: string;
  event_id: string;
  /** 1 for the first attempt of the URL's current run of attempts. */
  attempt: number;
  attempted_at: number;
  status_code: number | null;
  error: string;
  /** 'retrying', 'failed' (last attempt) or 'gone' (410: deliveries to the URL stopped). */
  outcome: string;
  next_attempt_at: number | null;
}

export interface WebhookSecretsTable {
  /** 'customer:<id>', or 'deployment' for OKMs with no customer. */
  owner: string;
  /** The whsec_ secret, sealed under a data key (ADR 0021); associated data `webhook-secret:<owner>`. */
  secret_sealed: string;
  /** The secret before the last rotation, still used to sign until previous_valid_until. */
  previous_secret_sealed: string | null;
  previous_valid_until: number | null;
  created_at: number;
  rotated_at: number | null;
}

export type DataKeyState = 'current' | 'previous' | 'retired';

export interface DataKeysTable {
  kid: string;
  state: DataKeyState;
  /** The data key encrypted under the master key; null once retired. */
  wrapped_key: string | null;
  /** Fingerprint of the master key that wraps wrapped_key. */
  master_key_check: string;
  created_at: number;
  previous_since: number | null;
  retired_at: number | null;
}

/** Failed claims of one serial number in the current window; pruned once expires_at has passed. */
/** Failed claims of a serial number by every customer, in the window that started at the first (src/okm/claim-policy.ts). */
export interface OkmClaimFailuresTable {
  serial_number: string;
  failures: number;
  window_started_at: number;
  /** A block of every customer, which versions before migration 0024 set; no longer read. */
  blocked_until: number | null;
  /** Claims by customers that have failed on the serial number are refused (429) until then. */
  slowed_until: number | null;
  expires_at: number;
}

/** Failed claims of a serial number by one customer. */
export interface OkmClaimCustomerFailuresTable {
  serial_number: string;
  customer_id: number;
  failures: number;
  window_started_at: number;
  /** That customer's claims of the serial number are refused (429) until then. */
  blocked_until: number | null;
  expires_at: number;
}

/** A fleet-event subscription: a customer's, or deployment-wide (customer_id null, admin). */
export interface WebhookEndpointsTable {
  id: Generated<number> & Id;
  customer_id: number | null;
  url: string;
  host: string;
  /** JSON array of event types. */
  event_types: string;
  created_at: number;
}

/** One fleet event for one endpoint: its body as sent, and where its delivery stands (as status_events). */
export interface FleetEventDeliveriesTable {
  id: Generated<number> & Id;
  endpoint_id: number;
  /** The endpoint's customer, whose secret signs; null: the deployment secret. */
  customer_id: number | null;
  url: string;
  host: string;
  event_id: string;
  event_type: string;
  payload: string;
  state: StatusEventState;
  attempts: number;
  next_attempt_at: number;
  claim_token: string | null;
  claimed_until: number | null;
  created_at: number;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: number | null;
}

/** A staged firmware rollout (contract §13). */
export interface RolloutsTable {
  id: Generated<number> & Id;
  /** null: every customer's OKMs (admin only). */
  customer_id: number | null;
  kind: string;
  version: string;
  /** JSON {firmware_version?, serial_numbers?}; null: no filter. */
  filter: string | null;
  /** JSON array of the groups' cumulative percents of the rollout's OKMs. */
  group_percents: string;
  success_threshold: number;
  error_threshold: number;
  update_timeout_ms: number;
  auto_advance: number;
  /** ready | running | paused | finished | aborted */
  state: string;
  /** Why it is paused, aborted or finished (error_threshold, operator, ...). */
  state_reason: string | null;
  /** Index of the last group started; -1 before the start. */
  current_group: number;
  start_at: number | null;
  /** Maintenance window in minutes after local midnight, in the customer's time zone. */
  window_from: number | null;
  window_to: number | null;
  approval_required: number;
  approved_by: string | null;
  approved_at: number | null;
  /** The creating operator's token subject (sub). */
  created_by: string;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** JSON array of the epoch ms each started group started at, by group index; null before the start. */
  group_started_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON retry policy of this rollout's offers (contract §15); null: the customer's, else the fleet default. */
  retry_policy: ColumnType<string | null, string | null | undefined, string | null>;
  /** When it was last resumed: only failures after it pause it again (0031); null: never resumed. */
  resumed_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/** One OKM of a rollout: its group, chosen once, and its progress. */
export interface RolloutMembersTable {
  rollout_id: number;
  serial_number: string;
  group_index: number;
  /** scheduled | offered | updated | failed */
  status: string;
  offered_at: number | null;
  status_changed_at: number | null;
}

/** A group of OKMs alike, as the last complete fleet pass counted them (src/fleet/fleet-pass.ts). */
export interface FleetSummarySnapshotTable {
  customer_id: number | null;
  last_correction: string | null;
  firmware_version: string | null;
  batch_key_firmware_version: string | null;
  wireless_key_firmware_version: string | null;
  /** 1: the OKMs never polled (overdue_at 0). */
  never_polled: number;
  /** 1: the OKMs the pass found overdue (overdue_at > 0). */
  overdue: number;
  /** 1: the OKMs stuck (okms.stuck_resolver set). */
  stuck: ColumnType<number, number | undefined, number>;
  okms: number;
}

/** A background pass that one process at a time runs (a lease), and when it last completed. */
export interface BackgroundPassesTable {
  name: string;
  holder: string | null;
  lease_expires_at: number;
  completed_at: number | null;
}

/** A person who signed in through the OpenID Provider (contract §17). */
export interface PeopleTable {
  id: Generated<number> & Id;
  /** The provider's issuer and the person's `sub` there: who the person is. */
  issuer: string;
  subject: string;
  /** From the ID token at the last sign-in. */
  email: string | null;
  name: string | null;
  created_at: number;
  signed_in_at: number;
}

/** What a role binding binds: an IdP group (OIDC_GROUPS_CLAIM), a person's email, or a person's subject. */
export type RoleBindingKind = 'group' | 'email' | 'subject';

export interface RoleBindingsTable {
  id: string;
  kind: RoleBindingKind;
  value: string;
  role: string;
  /** The one customer the role is for; null: every customer. */
  customer_id: number | null;
  created_at: number;
  /** The actor who made it (src/auth/actor.ts). */
  created_by: string;
}

export interface SessionsTable {
  /** SHA-256 (hex) of the secret in the session cookie. */
  id: string;
  person_id: number;
  /** JSON array of the person's IdP groups at the last sign-in or refresh. */
  groups: string;
  /** The provider's refresh token, sealed under the data keys (associated data `session-refresh:<id>`); null when it gave none. */
  refresh_token_sealed: string | null;
  created_at: number;
  /** When a request last used it (written at most once a minute): the idle timeout counts from here. */
  seen_at: number;
  /** When the groups were last read from the provider. */
  refreshed_at: number;
  /** The absolute end of the session. */
  expires_at: number;
  /** When it was signed out or revoked; null while it lasts. */
  ended_at: number | null;
  ended_by: string | null;
}

/** A sign-in between the redirect to the provider and its callback. */
export interface SignInAttemptsTable {
  /** SHA-256 (hex) of the `state` sent to the provider. */
  id: string;
  nonce: string;
  code_verifier: string;
  /** The console path to show once signed in. */
  return_to: string;
  created_at: number;
}

/** A token signed by `keyfleet token issue` (its `jti`), so that it can be listed and revoked. */
export interface ApiTokensTable {
  id: string;
  name: string;
  subject: string;
  customer_id: number | null;
  /** Space-separated. */
  scopes: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  revoked_by: string | null;
}

/** An entry as its change writes it (contract §18): what its hash covers besides its place in the chain. */
export interface AuditContentColumns {
  time: number;
  actor_kind: string;
  actor_id: string;
  actor_name: string;
  /** The customer's name (names never change), null for a change of the whole fleet. */
  customer: string | null;
  action: string;
  entity_type: string;
  entity_id: string;
  /** Canonical JSON (RFC 8785), redacted (src/audit/redaction.ts); null where there was nothing before (a creation) or after (a deletion). */
  before_json: string | null;
  after_json: string | null;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
}

/** An entry written by its change's transaction, waiting for the chainer to move it into the chain. */
export interface AuditPendingTable extends AuditContentColumns {
  id: Generated<number> & Id;
}

/** The chain: each entry with its place, written once by the chainer and never updated. */
export interface AuditEntriesTable extends AuditContentColumns {
  seq: number;
  prev_hash: string;
  hash: string;
}

/** The one row (id 1) holding the chain's last seq and hash: what the chainer locks while it chains. */
export interface AuditChainHeadTable {
  id: number;
  seq: number;
  hash: string;
}

/** The chain's length and last hash at `seq`, signed (a compact JWS by the signing key `kid`). */
export interface AuditCheckpointsTable {
  seq: number;
  hash: string;
  signed_at: number;
  kid: string;
  jws: string;
}

/** The one row (id 1) holding the id of the last entry shipped as an `audit.entry` fleet event. */
export interface AuditEventCursorTable {
  id: number;
  seq: number;
}
