import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { fieldMessage, isAbout } from '../../console/src/api/error-message.ts';
import { describeValidationError } from '../../src/http/validation.ts';

test('a 400 message naming a body field splits into the field and the sentence', () => {
  assert.deepEqual(fieldMessage('polling_interval: must be <= 3600'), { field: 'polling_interval', message: 'must be <= 3600' });
  assert.deepEqual(fieldMessage('key_checkout_window.time: must be >= 0'), { field: 'key_checkout_window.time', message: 'must be >= 0' });
  assert.deepEqual(fieldMessage('users_assets[3].permissions: required'), { field: 'users_assets[3].permissions', message: 'required' });
});

test('the request part before a field is dropped, and a message naming only the part has no field', () => {
  assert.deepEqual(fieldMessage('querystring.page: must be >= 1'), { field: 'page', message: 'must be >= 1' });
  assert.deepEqual(fieldMessage('body: must be object'), { field: null, message: 'must be object' });
});

test('a message that names no field is kept whole', () => {
  assert.deepEqual(fieldMessage('OKM not found'), { field: null, message: 'OKM not found' });
  assert.deepEqual(fieldMessage('Missing required scopes'), { field: null, message: 'Missing required scopes' });
});

test('the server’s own validation messages name the field the console’s form control has', () => {
  const message = describeValidationError('body', { keyword: 'maximum', instancePath: '/polling_interval', params: { limit: 3600 }, message: 'must be <= 3600', schemaPath: '' } as never);
  assert.equal(fieldMessage(message).field, 'polling_interval');
});

test('an error is about a control when it names the control or one of its members', () => {
  assert.ok(isAbout('key_checkout_window.time', 'key_checkout_window'));
  assert.ok(isAbout('asset_list[2]', 'asset_list'));
  assert.ok(isAbout('polling_interval', 'polling_interval'));
  assert.ok(!isAbout('polling_interval_x', 'polling_interval'));
  assert.ok(!isAbout(null, 'polling_interval'));
});

test('any message comes back whole or split at its first ": " without losing text', () => {
  fc.assert(
    fc.property(fc.string(), (text) => {
      const { field, message } = fieldMessage(text);
      if (field === null) assert.ok(text.endsWith(message));
      else assert.ok(text.endsWith(`${field}: ${message}`) || text.endsWith(`: ${message}`));
    }),
  );
});
