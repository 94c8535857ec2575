import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { memberSource } from '../../src/shared/raw-json.ts';

describe('memberSource', () => {
  test('gives a member\'s value exactly as written, whitespace and number forms included', () => {
    const text = ' { "a" : [1, "]}\\"" ] , "b":{ "x": 1.0e1 , "y" : "}" } ,"c":-0 } ';

    assert.equal(memberSource(text, 'a'), '[1, "]}\\"" ]');
    assert.equal(memberSource(text, 'b'), '{ "x": 1.0e1 , "y" : "}" }');
    assert.equal(memberSource(text, 'c'), '-0');
  });

  test('is undefined for a member the object does not have, nested members included', () => {
    assert.equal(memberSource('{"a":{"b":1}}', 'b'), undefined);
    assert.equal(memberSource('{}', 'a'), undefined);
  });

  test('takes the last of duplicate members and reads escaped names, as JSON.parse does', () => {
    assert.equal(memberSource('{"k":1,"\\u006b":2}', 'k'), '2');
  });

  test('for any JSON object, the source of each member parses to the value JSON.parse gives it', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 5 }), fc.boolean(), (object, pretty) => {
        const text = JSON.stringify(object, null, pretty ? 2 : undefined);
        const parsed = JSON.parse(text) as Record<string, unknown>;
        for (const key of Object.keys(parsed)) assert.deepEqual(JSON.parse(memberSource(text, key)!), parsed[key]);
      }),
    );
  });
});
