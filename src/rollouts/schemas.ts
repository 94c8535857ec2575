import { Type, type Static } from 'typebox';
import { FIRMWARE_KINDS, FIRMWARE_VERSION_PATTERN } from '../firmware/version.ts';
import { cursorPageQueryProperties } from '../http/cursor-paging.ts';
import { IsoTime, Nullable } from '../http/schemas.ts';
import { CUSTOMER_NAME_PATTERN, SERIAL_NUMBER_PATTERN } from '../shared/identifiers.ts';
import { RETRY_POLICY_SCHEMA } from '../shared/retry-policy.ts';
import { GROUP_STATES, MEMBER_STATES, ROLLOUT_STATES } from './model.ts';

export const MAX_GROUPS = 20;
export const MAX_FILTER_SERIALS = 10_000;
const CLOCK_TIME_PATTERN = '^([01][0-9]|2[0-3]):[0-5][0-9]$';
export const DURATION_PATTERN = '^[0-9]{1,9}(ms|s|m|h|d)$';

const Kind = Type.Enum([...FIRMWARE_KINDS]);
const Version = Type.String({ pattern: FIRMWARE_VERSION_PATTERN, description: 'a catalog release of the kind: dotted numbers, 2.10.0' });
const CustomerName = Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'the customer whose OKMs are updated; an admin token that names none updates every customer’s' });
const Percent = (description: string) => Type.Integer({ minimum: 0, maximum: 100, description });

const RolloutFilter = Type.Object(
  {
    firmware_version: Type.Optional(Type.String({ pattern: FIRMWARE_VERSION_PATTERN, description: 'only OKMs that last reported this version of the kind' })),
    serial_numbers: Type.Optional(
      Type.Array(Type.String({ pattern: SERIAL_NUMBER_PATTERN }), { minItems: 1, maxItems: MAX_FILTER_SERIALS, uniqueItems: true, description: 'only these OKMs' }),
    ),
  },
  { additionalProperties: false },
);

const MaintenanceWindow = Type.Object(
  {
    from: Type.String({ pattern: CLOCK_TIME_PATTERN, description: 'HH:MM, in the customer’s time zone' }),
    to: Type.String({ pattern: CLOCK_TIME_PATTERN, description: 'HH:MM; before `from`: the window spans midnight' }),
  },
  { additionalProperties: false },
);

export const CreateRolloutBody = Type.Object(
  {
    kind: Kind,
    version: Version,
    customer: Type.Optional(CustomerName),
    filter: Type.Optional(RolloutFilter),
    groups: Type.Array(
      Type.Object({ percent: Type.Integer({ minimum: 1, maximum: 100, description: 'cumulative share of the rollout’s OKMs reached once this group has started' }) }, { additionalProperties: false }),
      { minItems: 1, maxItems: MAX_GROUPS },
    ),
    success_threshold: Type.Optional(Percent('a group passes when this % of it has updated (default 95)')),
    error_threshold: Type.Optional(Percent('the rollout pauses itself when more than this % of a started group has failed (default 5)')),
    update_timeout: Type.Optional(Type.String({ pattern: DURATION_PATTERN, description: 'an offered OKM that polls on without updating this long has failed (default 1h)' })),
    auto_advance: Type.Optional(Type.Boolean({ description: 'start the next group when a group passes (default true)' })),
    start_at: Type.Optional(Type.String({ format: 'date-time', description: 'the rollout starts itself then (ISO 8601)' })),
    maintenance_window: Type.Optional(MaintenanceWindow),
    approval_required: Type.Optional(Type.Boolean({ description: 'another operator must approve it before it starts (default false)' })),
    retry_policy: Type.Optional(
      Type.Object(RETRY_POLICY_SCHEMA.properties, {
        additionalProperties: false,
        description: 'the retry policy of this rollout’s offers (contract §15), which wins over the customer’s and the fleet default; what is left out is the built-in default’s (backoff_polls [1, 2, 4, 8], max_backoff_polls 32)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateRolloutBody = Static<typeof CreateRolloutBody>;

/** PATCH /api/v1/rollouts/{id}: what may change while a rollout is ready or paused (its thresholds); what is left out stays. */
export const UpdateRolloutBody = Type.Object(
  {
    success_threshold: Type.Optional(Percent('a group passes when this % of it has updated')),
    error_threshold: Type.Optional(Percent('the rollout pauses itself when more than this % of a started group has failed')),
    update_timeout: Type.Optional(Type.String({ pattern: DURATION_PATTERN, description: 'an offered OKM that polls on without updating this long has failed' })),
    auto_advance: Type.Optional(Type.Boolean({ description: 'start the next group when a group passes' })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateRolloutBody = Static<typeof UpdateRolloutBody>;

/** POST /api/v1/rollouts/{id}/okms/retry and /exclude: the failed members to act on. */
export const FailedMembersBody = Type.Object(
  {
    serial_numbers: Type.Optional(
      Type.Array(Type.String({ pattern: SERIAL_NUMBER_PATTERN }), {
        minItems: 1,
        maxItems: MAX_FILTER_SERIALS,
        uniqueItems: true,
        description: 'these failed OKMs of the rollout (each must be one: 409 naming those that are not); left out: every failed OKM of the rollout',
      }),
    ),
  },
  { additionalProperties: false },
);
export type FailedMembersBody = Static<typeof FailedMembersBody>;

export const RolloutParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) }, { additionalProperties: false });
export type RolloutParams = Static<typeof RolloutParams>;

export const RolloutListQuery = Type.Object(
  {
    customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'customer to act for' })),
    state: Type.Optional(Type.Enum([...ROLLOUT_STATES])),
    ...cursorPageQueryProperties,
  },
  { additionalProperties: false },
);
export type RolloutListQuery = Static<typeof RolloutListQuery>;

export const CustomerOnlyQuery = Type.Object(
  { customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'customer to act for' })) },
  { additionalProperties: false },
);
export type CustomerOnlyQuery = Static<typeof CustomerOnlyQuery>;

const MEMBER_STATE_DESCRIPTION =
  'scheduled: not offered the version yet; blocked: scheduled in a started group, polling, but stuck on a resolver (one before the rollout’s answers its polls, so the offer is never sent); silent: scheduled in a started group, and no poll since the group started; offered: offered, not updated yet; updated: reports the version or a newer one; failed: offered, and still polling without updating after update_timeout, or blocked or silent for update_timeout after its group started';

const Counts = Type.Object(Object.fromEntries(MEMBER_STATES.map((state) => [state, Type.Integer()])) as Record<(typeof MEMBER_STATES)[number], ReturnType<typeof Type.Integer>>, {
  description: `OKMs of each state (${MEMBER_STATE_DESCRIPTION}); GET /api/v1/rollouts/{id}/okms?state= lists them`,
});

export const GroupView = Type.Object({
  percent: Type.Integer(),
  okms: Type.Integer({ description: 'members of the group' }),
  state: Type.Enum([...GROUP_STATES], {
    description:
      'waiting: not started; running; paused: the rollout is paused at this group; completed: passed and the next one started, or the rollout finished; aborted: the rollout was aborted before this group completed',
  }),
  counts: Counts,
  started_at: Nullable({ ...IsoTime, description: 'when the group started; null: not started' }),
  first_polls_by: Nullable({
    ...IsoTime,
    description:
      'when one fleet polling interval (FLEET_POLLING_INTERVAL) has passed since the group started: until then its silent OKMs have not missed a poll yet, and the console says they are waiting for their first poll; null: not started',
  }),
});

const MemberState = Type.Enum([...MEMBER_STATES], { description: MEMBER_STATE_DESCRIPTION });

export const RolloutOkmListQuery = Type.Object(
  {
    customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'customer to act for' })),
    state: Type.Optional(MemberState),
    group: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_GROUPS - 1, description: 'only the OKMs of this group (its index, from 0)' })),
    ...cursorPageQueryProperties,
  },
  { additionalProperties: false },
);
export type RolloutOkmListQuery = Static<typeof RolloutOkmListQuery>;

/** The rollout OKM list's filters without its paging: what its CSV export takes. */
export const RolloutOkmExportQuery = Type.Object(
  { customer: RolloutOkmListQuery.properties.customer, state: RolloutOkmListQuery.properties.state, group: RolloutOkmListQuery.properties.group },
  { additionalProperties: false },
);
export type RolloutOkmExportQuery = Static<typeof RolloutOkmExportQuery>;

export const RolloutOkmView = Type.Object({
  serial_number: Type.String({ description: 'the OKM’s serial number' }),
  group: Type.Integer({ description: 'index of its group, from 0' }),
  state: MemberState,
  offered_at: Nullable(Type.String({ format: 'date-time', description: 'when a poll was first answered with the version; null: not offered yet' })),
  last_sync_time: Nullable(Type.String({ format: 'date-time', description: 'its last poll; null: never polled' })),
  reported_version: Nullable(Type.String({ description: 'the version of the rollout’s kind it last reported' })),
  blocked_by: Nullable(Type.String({ description: 'the resolver (reply key, e.g. cacheMode) a blocked OKM is stuck on; null unless blocked' })),
  first_poll_due_at: Nullable({
    ...IsoTime,
    description: 'when one of the OKM’s own polling intervals has passed since its group started: until then a silent OKM is waiting for its first poll; null: its group has not started',
  }),
});
export type RolloutOkmView = Static<typeof RolloutOkmView>;

export const RolloutView = Type.Object({
  id: Type.Integer(),
  customer: Nullable(Type.String()),
  kind: Kind,
  version: Type.String(),
  filter: Nullable(RolloutFilter),
  state: Type.Enum([...ROLLOUT_STATES]),
  state_reason: Nullable(Type.String({ description: 'why it paused, finished or was aborted' })),
  current_group: Nullable(Type.Integer({ description: 'index of the last group started' })),
  groups: Type.Array(GroupView),
  totals: Counts,
  success_threshold: Type.Integer(),
  error_threshold: Type.Integer(),
  update_timeout: Type.String(),
  auto_advance: Type.Boolean(),
  start_at: Nullable(IsoTime),
  maintenance_window: Nullable(Type.Object({ from: Type.String(), to: Type.String(), time_zone: Type.String() })),
  approval_required: Type.Boolean(),
  retry_policy: Nullable(
    Type.Required(RETRY_POLICY_SCHEMA, { description: 'the rollout’s own retry policy of its offers, complete; null: its OKMs’ customer’s, else the fleet default (FIRMWARE_RETRY_POLICY)' }),
  ),
  approved_by: Nullable(Type.String()),
  approved_at: Nullable(IsoTime),
  created_by: Type.String(),
  created_at: IsoTime,
  updated_at: IsoTime,
  started_at: Nullable(IsoTime),
  finished_at: Nullable(IsoTime),
  resumed_at: Nullable({ ...IsoTime, description: 'when it was last resumed: only members failed since then pause it again for its error threshold; null: never resumed' }),
});
export type RolloutView = Static<typeof RolloutView>;
