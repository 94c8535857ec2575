import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { compareFirmwareVersions, FIRMWARE_VERSION_PATTERN, parseFirmwareVersion } from '../../src/firmware/version.ts';

/** The parse without the cache: what parseFirmwareVersion must answer for any text, asked once or many times. */
const parsedAfresh = (text: string) => (new RegExp(FIRMWARE_VERSION_PATTERN).test(text) ? text.split('.').map(Number) : undefined);

const versionLike = fc.oneof(
  fc.array(fc.nat({ max: 2_000_000_000 }), { minLength: 1, maxLength: 5 }).map((parts) => parts.join('.')),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('', '.', '1.', '01', '1..2', '1.2.3.4.5', ' 1', '1e3', '2.10.0', '999999999.999999999.999999999.999999999', `${'1'.repeat(40)}`, `1.${'0'.repeat(60)}`),
);

test('a version parses the same however often it is asked, also after more distinct texts than the cache keeps', () => {
  fc.assert(
    fc.property(fc.array(versionLike, { minLength: 1, maxLength: 3000 }), (texts) => {
      for (const text of [...texts, ...texts.slice().reverse()]) assert.deepEqual(parseFirmwareVersion(text), parsedAfresh(text));
    }),
    { numRuns: 20 },
  );
});

test('parsed parts are frozen, so that a caller cannot change what the next poll reads', () => {
  const parts = parseFirmwareVersion('2.10.1')!;
  assert.ok(Object.isFrozen(parts));
  assert.equal(parseFirmwareVersion('2.10.1'), parts);
  assert.equal(parseFirmwareVersion(undefined), undefined);
  assert.equal(compareFirmwareVersions(parts, parseFirmwareVersion('2.9.9')!), 1);
});
