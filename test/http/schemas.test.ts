import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FREE_TEXT_PATTERN, isFreeText } from '../../src/http/schemas.ts';

const pattern = new RegExp(FREE_TEXT_PATTERN, 'u');

test('isFreeText answers as FREE_TEXT_PATTERN does, for any string', () => {
  // Printable ASCII around its edges, controls (C0, DEL, C1), surrogates paired and lone, and any code unit.
  const unit = fc.oneof(
    fc.constantFrom(' ', '~', '1', '.', 'a', '\x1f', '\x7f', '\x80', '\x9f', '\xa0', '\0', '\t', '\n', 'é', '€', '\ud83d', '\ude00', '\ud83d\ude00'),
    fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
  );
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit, maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.string()), (value) => {
      assert.equal(isFreeText(value), pattern.test(value));
    }),
    { numRuns: 5000 },
  );
});

test('free text at the edges: printable ASCII and paired surrogates are free text; controls and lone surrogates are not', () => {
  for (const free of ['', '2.10.3', ' ~', 'é', '\ud83d\ude00']) assert.equal(isFreeText(free), true, JSON.stringify(free));
  for (const not of ['\0', '1.0\n', '\x7f', '\x9f', '\ud83d', 'a\ude00']) assert.equal(isFreeText(not), false, JSON.stringify(not));
});
