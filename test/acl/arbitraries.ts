import fc from 'fast-check';
import type { AclBodyFixture, AclUserBody } from './helpers.ts';

const serialNumber = fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/);

/** Byte order, which is code-unit order for these ASCII serial numbers. */
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** An ACL user's settings (all but its id and permissions), each any valid value. */
export const userSettings = {
  pin_hash: fc.stringMatching(/^[A-Za-z0-9]{1,128}$/),
  auth_time: fc.constantFrom(1, 4, 8, 12, 24),
  sounder: fc.boolean(),
  sounder_delay: fc.integer({ min: 0, max: 120 }),
  sounder_duration: fc.integer({ min: 0, max: 255 }),
  sounder_volume: fc.constantFrom(0, 1, 2),
};

/** Permissions on `lockCount` locks. */
export const permissionsOn = (lockCount: number) => fc.array(fc.constantFrom(0, 1, 17), { minLength: lockCount, maxLength: lockCount });

const userWithout = (lockCount: number): fc.Arbitrary<AclUserBody> =>
  fc.record({ user_id: fc.integer({ min: 0, max: 999_999_999 }), ...userSettings, permissions: permissionsOn(lockCount) });

/** Any JSON object, but without the prototype-poisoning keys that the body parser refuses at any depth. */
const userData = fc
  .dictionary(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 })
  .filter((data) => !/"(__proto__|constructor)"/.test(JSON.stringify(data)));

/** Any valid ACL of the customer, within the given numbers of users and locks. */
export function anyValidAcl(
  customer: string,
  sizes: { minUsers?: number; maxUsers?: number; minLocks?: number; maxLocks?: number } = {},
): fc.Arbitrary<AclBodyFixture & { id: string }> {
  return fc
    .uniqueArray(serialNumber, { minLength: sizes.minLocks ?? 0, maxLength: sizes.maxLocks ?? 6 })
    .map((locks) => locks.sort(byteOrder))
    .chain((locks) =>
      fc.record(
        {
          id: fc.uuid(),
          customer: fc.constant(customer),
          users: fc.uniqueArray(userWithout(locks.length), {
            selector: (user) => user.user_id,
            minLength: sizes.minUsers ?? 0,
            maxLength: sizes.maxUsers ?? 5,
          }),
          locks: fc.constant(locks),
          user_data: userData,
        },
        { requiredKeys: ['id', 'customer', 'users', 'locks'] },
      ),
    )
    // As a client holds it: plain objects (fast-check makes null-prototype ones) and JSON numbers (no -0).
    .map((acl) => JSON.parse(JSON.stringify(acl)) as AclBodyFixture & { id: string });
}

/** One field of a valid ACL made invalid, and the field path a 400 must name. */
export interface Corruption {
  field: string;
  apply(acl: Record<string, unknown> & AclBodyFixture): void;
}

const WRONG_USER_VALUES: Record<string, unknown[]> = {
  user_id: [-1, 1_000_000_000, 1.5, '7', null],
  pin_hash: ['', 'a-b', 'x'.repeat(129), 42],
  auth_time: [0, 2, 6, 48, '8'],
  sounder: [1, 'true', null],
  sounder_delay: [-1, 121, 0.5, '10'],
  sounder_duration: [-1, 256, '30'],
  sounder_volume: [-1, 3, '2'],
  permissions: ['all', null, {}],
};

/** Every single-field corruption of an ACL with at least 2 users and 2 locks, given index choices. */
export function corruptionsOf(acl: AclBodyFixture, pick: number): Corruption[] {
  const user = pick % acl.users.length;
  const lock = pick % acl.locks.length;
  const laterUser = 1 + (pick % (acl.users.length - 1));
  const laterLock = 1 + (pick % (acl.locks.length - 1));
  const wrong = <T>(values: T[]) => values[pick % values.length]!;
  const corruptions: Corruption[] = [
    { field: 'id', apply: (a) => (a.id = wrong(['acl-1', '', 42, 'g'.repeat(36)]) as string) },
    { field: 'customer', apply: (a) => (a.customer = wrong(['', 'a b', 7, null]) as string) },
    { field: 'users', apply: (a) => (a.users = wrong([{}, 'users', null]) as never) },
    { field: 'locks', apply: (a) => (a.locks = wrong([{}, 'locks', null]) as never) },
    { field: 'user_data', apply: (a) => (a.user_data = wrong([[], 'text', 1, null])) },
    { field: 'okm_id', apply: (a) => (a.okm_id = wrong(['', 'OKM 1', 'x'.repeat(65), 5]) as string) },
    { field: 'colour', apply: (a) => (a.colour = 'blue') },
    { field: `locks[${lock}]`, apply: (a) => (a.locks[lock] = wrong(['', 'LOCK 1', 'x'.repeat(65), 5]) as string) },
    { field: `locks[${laterLock}]`, apply: (a) => (a.locks[laterLock] = a.locks[laterLock - 1]!) },
    { field: `users[${laterUser}].user_id`, apply: (a) => (a.users[laterUser]!.user_id = a.users[laterUser - 1]!.user_id) },
    { field: `users[${user}].permissions`, apply: (a) => void a.users[user]!.permissions.pop() },
    { field: `users[${user}].permissions[${lock}]`, apply: (a) => (a.users[user]!.permissions[lock] = wrong([2, 16, -1, '1', null]) as number) },
    { field: `users[${user}].nickname`, apply: (a) => ((a.users[user] as unknown as Record<string, unknown>).nickname = 'x') },
  ];
  for (const [name, values] of Object.entries(WRONG_USER_VALUES)) {
    corruptions.push({ field: `users[${user}].${name}`, apply: (a) => ((a.users[user] as unknown as Record<string, unknown>)[name] = wrong(values)) });
  }
  return corruptions;
}
