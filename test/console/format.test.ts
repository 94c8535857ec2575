import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { okmShownState, relativeTime, sentOnLastPollNote, stuckReason } from '../../console/src/format.ts';
import { decodeClaims, tokenFromFragment } from '../../console/src/session-token.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');

test('relative time says how long ago or ahead, in the largest whole unit', () => {
  assert.equal(relativeTime('2026-11-22T12:00:02Z', NOW), 'just now');
  assert.equal(relativeTime('2026-11-22T11:59:30Z', NOW), '30 seconds ago');
  assert.equal(relativeTime('2026-11-22T11:55:00Z', NOW), '5 minutes ago');
  assert.equal(relativeTime('2026-11-22T09:00:00Z', NOW), '3 hours ago');
  assert.equal(relativeTime('2026-11-21T12:00:00Z', NOW), 'yesterday');
  assert.equal(relativeTime('2026-11-22T12:10:00Z', NOW), 'in 10 minutes');
});

test('relative time never throws for any instant within a century', () => {
  fc.assert(fc.property(fc.integer({ min: -3e12, max: 3e12 }), (offset) => typeof relativeTime(new Date(NOW + offset).toISOString(), NOW) === 'string'));
});

test('shown with what the next poll sends, an OKM in step at its last poll has a correction due once configured since; the others keep their state', () => {
  assert.equal(okmShownState({ state: 'in_step' }, 'cacheMode'), 'due');
  assert.equal(okmShownState({ state: 'in_step' }, null), 'in_step');
  assert.equal(okmShownState({ state: 'in_step' }, undefined), 'in_step', 'not known: the state');
  assert.equal(okmShownState({ state: 'drifting' }, null), 'drifting');
  assert.equal(okmShownState({ state: 'drifting' }, 'pollingInterval'), 'drifting');
  assert.equal(okmShownState({ state: 'never_polled' }, 'auditUrl'), 'never_polled');
});

test('a stuck OKM’s reason names the resolver, the polls and since when: the time alone that day, with the date before, and the year in another', () => {
  const berlin = { locale: 'en-GB', timeZone: 'Europe/Berlin' };
  const stuck = { resolver: 'pollingInterval', polls: 5 };
  const reason = (since: string) => stuckReason({ ...stuck, since: Date.parse(since) }, NOW, berlin);

  assert.equal(reason('2026-11-22T11:02:00Z'), 'sent pollingInterval on 5 polls in a row without effect, since 12:02');
  assert.equal(reason('2026-11-21T23:30:00Z'), 'sent pollingInterval on 5 polls in a row without effect, since 00:30', 'the same day in Berlin, not in UTC');
  assert.equal(reason('2026-11-20T13:02:00Z'), 'sent pollingInterval on 5 polls in a row without effect, since 20 Nov, 14:02');
  assert.equal(reason('2025-12-31T13:02:00Z'), 'sent pollingInterval on 5 polls in a row without effect, since 31 Dec 2025, 14:02');
  assert.equal(stuckReason({ resolver: 'kasFirmware', polls: 1, since: NOW }, NOW, berlin), 'sent kasFirmware on 1 poll in a row without effect, since 13:00');
});

const jwt = (payload: object) => `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.c2ln`;

test('the claims of a token are read for whom to show, without verifying it', () => {
  const claims = decodeClaims(jwt({ scope: 'okm:read admin', customer: 'acme', exp: 100, sub: 'customer:acme', jti: 'tok-1' }));
  assert.deepEqual(claims, { scopes: ['okm:read', 'admin'], customer: 'acme', isAdmin: true, expiresAt: 100, subject: 'customer:acme', tokenId: 'tok-1' });
  assert.equal(decodeClaims(jwt({ scope: 'okm:read' }))?.tokenId, null);
  assert.deepEqual(decodeClaims(jwt({ scp: ['okm:read'] }))?.scopes, ['okm:read']);
});

test('text that is not a compact JWT has no claims', () => {
  for (const text of ['', 'abc', 'a.b', 'a.b.c.d', 'a.%%%.c', `x.${Buffer.from('[1').toString('base64url')}.y`]) assert.equal(decodeClaims(text), null, text);
});

test('a sign-in URL’s fragment gives its token', () => {
  assert.equal(tokenFromFragment('#token=abc.def.ghi'), 'abc.def.ghi');
  assert.equal(tokenFromFragment('#other=1&token=abc'), 'abc');
  assert.equal(tokenFromFragment(''), null);
  assert.equal(tokenFromFragment('#token='), null);
});

test('a correction sent on the last poll and due again says why: a newer message, the retry policy, a stuck OKM, or a configuration changed since', () => {
  assert.equal(sentOnLastPollNote({ name: 'message', verdict: 'next' }, null), 'An earlier message was sent on the last poll.');
  assert.equal(sentOnLastPollNote({ name: 'kasFirmware', verdict: 'held_back' }, 'kasFirmware'), 'Offered on the last poll and not taken; the retry policy skips it on the next polls.');
  assert.equal(sentOnLastPollNote({ name: 'pollingInterval', verdict: 'next' }, 'pollingInterval'), 'Also sent on the last poll, without effect: the OKM is stuck on it.');
  assert.equal(sentOnLastPollNote({ name: 'pollingInterval', verdict: 'next' }, 'cacheMode'), 'Also sent on the last poll; the configuration changed since.');
  assert.equal(sentOnLastPollNote({ name: 'cacheMode', verdict: 'later' }, null), 'Also sent on the last poll; the configuration changed since.');
});
