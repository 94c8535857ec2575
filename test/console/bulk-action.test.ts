import assert from 'node:assert/strict';
import { test } from 'node:test';
import { actionOfDraft, actionWords, type Draft } from '../../console/src/bulk-action.ts';

const DRAFT: Draft = { kind: 'setting', setting: 'polling_interval', value: '', firmwareKind: 'kas', version: '', customer: '', messageType: '', payload: '', url: '' };
const draft = (changes: Partial<Draft>): Draft => ({ ...DRAFT, ...changes });

test('a setting becomes a merge patch of that one setting; empty unsets it; auditing reads on and off', () => {
  assert.deepEqual(actionOfDraft(draft({ value: ' 300 ' })), { type: 'configure', settings: { polling_interval: 300 } });
  assert.deepEqual(actionOfDraft(draft({ setting: 'cache_mode', value: '' })), { type: 'configure', settings: { cache_mode: null } });
  assert.deepEqual(actionOfDraft(draft({ setting: 'auditing_enabled', value: 'Off' })), { type: 'configure', settings: { auditing_enabled: false } });
  assert.equal(actionOfDraft(draft({ setting: 'auditing_enabled', value: 'maybe' })), 'Auditing: type on or off.');
  assert.equal(typeof actionOfDraft(draft({ value: '2.5' })), 'string', 'a number that is not whole is refused in words');
});

test('a pin, an assignment, a message and a subscriber URL become their actions; what is missing is said', () => {
  assert.deepEqual(actionOfDraft(draft({ kind: 'pin', firmwareKind: 'batch_key', version: '3.1.0' })), { type: 'configure', settings: { firmware: { batch_key: '3.1.0' } } });
  assert.deepEqual(actionOfDraft(draft({ kind: 'pin', version: ' ' })), { type: 'configure', settings: { firmware: { kas: null } } });
  assert.deepEqual(actionOfDraft(draft({ kind: 'assign', customer: 'acme' })), { type: 'assign', customer: 'acme' });
  assert.deepEqual(actionOfDraft(draft({ kind: 'assign' })), { type: 'assign', customer: null });
  assert.deepEqual(actionOfDraft(draft({ kind: 'message', messageType: 'open-door', payload: '{"door":2}' })), { type: 'queue_message', message: { type: 'open-door', payload: { door: 2 } } });
  assert.equal(actionOfDraft(draft({ kind: 'message', messageType: 'x', payload: '{door' })), 'The payload is not JSON.');
  assert.equal(actionOfDraft(draft({ kind: 'message' })), 'Name the message type.');
  assert.deepEqual(actionOfDraft(draft({ kind: 'unsubscribe', url: 'https://hooks.example/x' })), { type: 'remove_subscriber_url', url: 'https://hooks.example/x' });
  assert.equal(actionOfDraft(draft({ kind: 'unsubscribe' })), 'Type the subscriber URL to remove.');
});

test('an action reads as words in the preview and the confirmation', () => {
  assert.equal(actionWords({ type: 'configure', settings: { polling_interval: 300 } }), 'set polling_interval to 300');
  assert.equal(actionWords({ type: 'configure', settings: { cache_mode: null } }), 'unset cache_mode (fleet default)');
  assert.equal(actionWords({ type: 'configure', settings: { firmware: { kas: '3.3.0' } } }), 'pin kas firmware 3.3.0');
  assert.equal(actionWords({ type: 'configure', settings: { firmware: { kas: null } } }), 'remove the kas firmware pin');
  assert.equal(actionWords({ type: 'assign', customer: 'beta' }), 'assign them to beta');
  assert.equal(actionWords({ type: 'queue_message', message: { type: 'reboot' } }), 'queue a "reboot" message');
  assert.equal(actionWords({ type: 'remove_subscriber_url', url: 'https://x.example/' }), 'remove the subscriber https://x.example/');
});
