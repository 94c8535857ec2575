import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { REPORTED_PARAMETERS, REPORTED_VALUE_MAX_LENGTH, reportedValuesJson } from '../../src/device/reported.ts';

const parameterName = fc.oneof(fc.constantFrom(...REPORTED_PARAMETERS), fc.string({ maxLength: 12 }));
const parameterValue = fc.oneof(fc.string({ maxLength: 300 }), fc.array(fc.string({ maxLength: 20 }), { minLength: 2, maxLength: 3 }));

test('the stored reported values are the known parameters sent once, in the parameters order, each cut to the bounded length', () => {
  fc.assert(
    fc.property(fc.dictionary(parameterName, parameterValue, { maxKeys: 20 }), (query) => {
      const expected = REPORTED_PARAMETERS.flatMap((name) => {
        const value = Object.hasOwn(query, name) ? query[name] : undefined;
        return typeof value === 'string' ? [[name, value.slice(0, REPORTED_VALUE_MAX_LENGTH)] as const] : [];
      });
      assert.deepEqual(Object.entries(JSON.parse(reportedValuesJson(query))), expected);
    }),
  );
});

test('every known parameter sent is stored, in the order the parameters are listed', () => {
  const query = Object.fromEntries([...REPORTED_PARAMETERS].reverse().map((name) => [name, `${name} value`]));
  assert.deepEqual(Object.keys(JSON.parse(reportedValuesJson(query))), REPORTED_PARAMETERS);
});

test('an unknown parameter, even one named like an object property, is not stored', () => {
  const query = Object.assign(Object.create(null), { toString: 'x', constructor: 'y', retailCfg: '2' });
  assert.equal(reportedValuesJson(query), '{"retailCfg":"2"}');
  assert.equal(reportedValuesJson({}), '{}');
});
