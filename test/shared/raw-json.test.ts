import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { duplicateNamePath, elementSources, memberSource, valueSource } from '../../src/shared/raw-json.ts';

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

describe('valueSource and elementSources', () => {
  test('give a value and each element of an array exactly as written, without the whitespace around them', () => {
    assert.equal(valueSource(' \n {"a" : 1.0}\t\r\n'), '{"a" : 1.0}');
    assert.equal(valueSource('-0'), '-0');
    assert.deepEqual(elementSources(' [ -0 , 1.0,"]",[ 1 ,2 ] ,{"x" :[]}, 123456789012345678901234567890 ] '), ['-0', '1.0', '"]"', '[ 1 ,2 ]', '{"x" :[]}', '123456789012345678901234567890']);
    assert.deepEqual(elementSources('[]'), []);
    assert.deepEqual(elementSources('[ true,false , null]'), ['true', 'false', 'null']);
  });

  test('for any JSON array, each element\'s source parses to the element JSON.parse gives', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 6 }), fc.boolean(), (array, pretty) => {
        const text = JSON.stringify(array, null, pretty ? 2 : undefined);
        const sources = elementSources(text);
        assert.deepEqual(sources.map((source) => JSON.parse(source) as unknown), JSON.parse(text));
        assert.deepEqual(JSON.parse(valueSource(text)), JSON.parse(text));
      }),
    );
  });
});

describe('duplicateNamePath', () => {
  test('names the first member whose name its object already has, with its path', () => {
    assert.deepEqual(duplicateNamePath('{"a":1,"a":2}'), ['a']);
    assert.deepEqual(duplicateNamePath('[{}, {"x":[{"b":1,"c":{"b":2},"b":3}]}]'), [1, 'x', 0, 'b']);
    assert.deepEqual(duplicateNamePath('{"k":{"z":1},"\\u006b":2}'), ['k']);
    assert.deepEqual(duplicateNamePath(' { "s" : "\\"a\\":1,\\"a\\":2" , "t" : [ "{" ] } '), undefined);
  });

  test('for any JSON value written by JSON.stringify (no name twice), finds none; with one member repeated, finds that one', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, pretty) => {
        assert.equal(duplicateNamePath(JSON.stringify(value, null, pretty ? 1 : undefined)), undefined);
      }),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1, maxKeys: 5 }), fc.nat(), fc.jsonValue(), (object, pick, value) => {
        const names = Object.keys(object);
        const name = names[pick % names.length]!;
        const text = `{"wrapper":[${JSON.stringify(object).slice(0, -1)},${JSON.stringify(name)}:${JSON.stringify(value)}}]}`;
        assert.deepEqual(duplicateNamePath(text), ['wrapper', 0, name]);
      }),
    );
  });
});
