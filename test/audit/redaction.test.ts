import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { REDACTED, REDACTED_CHANGED, redactChange } from '../../src/audit/redaction.ts';

/** What JSON.stringify writes of a value, read back: what an entry's before and after are stored as. */
const jsonForm = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/** Values a service could describe a change with: JSON and what JSON.stringify also writes (dates, boxed values, undefined members, holes, non-finite numbers), with some redacted member names among the keys. */
const describedValue = fc
  .anything({
    key: fc.oneof(fc.string(), fc.constantFrom('pin_hash', 'secret', 'token', 'password_sealed', 'name')),
    withDate: true,
    withBoxedValues: true,
    withSparseArray: true,
    withNullPrototype: true,
    values: [fc.boolean(), fc.integer(), fc.double(), fc.string(), fc.constant(null), fc.constant(undefined)],
  })
  .filter((value) => {
    try {
      return !JSON.stringify(value ?? null).includes('"__proto__"');
    } catch {
      return false;
    }
  });

test('a change is redacted as its JSON form is: whatever values describe it, the same before and after', () => {
  fc.assert(
    fc.property(fc.option(describedValue, { nil: undefined }), fc.option(describedValue, { nil: undefined }), (before, after) => {
      assert.deepEqual(redactChange(before, after), redactChange(jsonForm(before), jsonForm(after)));
    }),
    { numRuns: 2_000 },
  );
});

test('a redacted member reads as redacted at any depth, and as changed after a change of its value', () => {
  const before = { users: [{ user_id: 1, pin_hash: 'a1' }, { user_id: 2, pin_hash: 'b2' }], when: new Date(0) };
  const after = { users: [{ user_id: 1, pin_hash: 'a1' }, { user_id: 2, pin_hash: 'c3' }], when: new Date(0), extra: undefined };

  assert.deepEqual(redactChange(before, after), {
    before: { users: [{ user_id: 1, pin_hash: REDACTED }, { user_id: 2, pin_hash: REDACTED }], when: '1970-01-01T00:00:00.000Z' },
    after: { users: [{ user_id: 1, pin_hash: REDACTED }, { user_id: 2, pin_hash: REDACTED_CHANGED }], when: '1970-01-01T00:00:00.000Z' },
  });
});
