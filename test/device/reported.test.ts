import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseReported } from '../../src/device/reported.ts';

const INTEGER_PARAMETERS = ['kasDateTime', 'retailCfg', 'keyCheckoutWindowTime', 'cacheMode', 'pollingInterval'] as const;
/** Strings near the rule's edges: digits, a sign, lengths around 15, and what is not a plain integer. */
const integerLike = fc.oneof(
  fc.string({ unit: fc.constantFrom('0', '1', '5', '9', '-', '+', '.', 'e', 'x', ' ', '\n', '٣', '/', ':'), maxLength: 18 }),
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n }).map(String),
  fc.string({ maxLength: 5 }),
);

test('an integer parameter is known exactly when it is a plain decimal integer of at most 15 digits, and then read as that number', () => {
  fc.assert(
    fc.property(fc.constantFrom(...INTEGER_PARAMETERS), fc.oneof(integerLike, fc.array(integerLike, { minLength: 2, maxLength: 2 })), (name, value) => {
      const expected = typeof value === 'string' && /^-?[0-9]{1,15}$/.test(value) ? Number(value) : undefined;
      assert.equal(parseReported({ [name]: value })[name], expected);
    }),
    { numRuns: 2000 },
  );
});

test('an installer code is known exactly when it is 5 to 20 decimal digits', () => {
  const codeLike = fc.oneof(integerLike, fc.string({ unit: fc.constantFrom('0', '7', '9', '-', ' ', '٣', 'a'), minLength: 3, maxLength: 22 }));
  fc.assert(
    fc.property(fc.oneof(codeLike, fc.array(codeLike, { minLength: 2, maxLength: 2 })), (value) => {
      const expected = typeof value === 'string' && /^[0-9]{5,20}$/.test(value) ? value : undefined;
      assert.equal(parseReported({ installCode: value }).installCode, expected);
    }),
    { numRuns: 2000 },
  );
  assert.equal(parseReported({ installCode: '12345' }).installCode, '12345');
  assert.equal(parseReported({ installCode: '1'.repeat(20) }).installCode, '1'.repeat(20));
  for (const unknown of ['1234', '1'.repeat(21), '-12345', '12345 ', '١٢٣٤٥']) assert.equal(parseReported({ installCode: unknown }).installCode, undefined, unknown);
});

test('integer parameters at the edges of the rule', () => {
  const read = (value: string) => parseReported({ cacheMode: value }).cacheMode;
  assert.equal(read('2'), 2);
  assert.equal(read('-0'), -0);
  assert.equal(read('007'), 7);
  assert.equal(read('999999999999999'), 999_999_999_999_999);
  assert.equal(read('-999999999999999'), -999_999_999_999_999);
  for (const unknown of ['', '-', '1000000000000000', '5.0', ' 5', '5 ', '5\n', '+5', '1e3', '0x10', '--1', '٣']) assert.equal(read(unknown), undefined, JSON.stringify(unknown));
});
