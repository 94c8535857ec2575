import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bufferedMessage } from '../../../src/device/resolvers/buffered-message.ts';
import { desiredState, reportInSync } from './fixtures.ts';

test('when a message is pending, it is sent with its id, type and payload', () => {
  const desired = desiredState({ pendingMessage: { id: 7, type: 'delete-assets', payload: null } });

  const correction = bufferedMessage(desired, reportInSync(desired));

  assert.deepEqual(correction, { message: { id: 7, type: 'delete-assets', payload: null } });
});

test('when no message is pending, no correction', () => {
  const desired = desiredState();

  assert.equal(bufferedMessage(desired, reportInSync(desired)), undefined);
});
