import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { stringifyWithJsonTexts } from '../../src/http/json-texts.ts';
import { JsonText } from '../../src/shared/raw-json.ts';

describe('stringifyWithJsonTexts', () => {
  test('without JsonText values it writes what JSON.stringify writes', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => stringifyWithJsonTexts(value) === JSON.stringify(value)));
    const odd = { a: undefined, b: [undefined, () => 1], c: new Date(0), d: -0, e: { toJSON: () => 'x' } };
    assert.equal(stringifyWithJsonTexts(odd), JSON.stringify(odd));
  });

  test('writes each JsonText as its own text, wherever it is', () => {
    const text = '{"big":123456789012345678901234567890, "z" : -0,"a":1,"a":2}';

    assert.equal(stringifyWithJsonTexts({ data: [{ record: new JsonText(text) }, new JsonText('1.0')], n: null }), `{"data":[{"record":${text}},1.0],"n":null}`);
    assert.equal(stringifyWithJsonTexts(new JsonText('-0')), '-0');
  });
});
