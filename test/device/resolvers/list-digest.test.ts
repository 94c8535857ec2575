import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { listDiffers } from '../../../src/device/resolvers/list-digest.ts';
import { canonicalDigest } from '../../../src/shared/canonical-json.ts';

const configuredList = fc.array(fc.jsonValue(), { maxLength: 5 }).map((items) => ({ digest: canonicalDigest(items), items }));
/** The stored digest in any mix of letter cases, another digest, or any text. */
const reportedFor = (digest: string) =>
  fc.oneof(
    fc.array(fc.boolean(), { minLength: digest.length, maxLength: digest.length }).map((upper) => [...digest].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('')),
    fc.constant(digest),
    fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 64, maxLength: 64 }),
    fc.string({ maxLength: 70 }),
    fc.constant(undefined),
  );

test('a configured list differs exactly when the reported digest is not its digest in some letter case', () => {
  fc.assert(
    fc.property(
      configuredList.chain((list) => fc.tuple(fc.constant(list), reportedFor(list.digest))),
      ([list, reported]) => {
        assert.equal(listDiffers(list, reported), reported === undefined || reported.toLowerCase() !== list.digest);
      },
    ),
  );
});

test('no configured list never differs, whatever is reported', () => {
  fc.assert(fc.property(fc.option(fc.string(), { nil: undefined }), (reported) => assert.equal(listDiffers(null, reported), false)));
});
