import assert from 'node:assert/strict';
import { test } from 'node:test';
import { actorLabel } from '../../console/src/actor-label.ts';
import { ROLE_NAMES as CONSOLE_ROLE_NAMES } from '../../console/src/roles.ts';
import { claimsOfPerson, noAccessReason, sessionEndedReason, singleSignOnHref } from '../../console/src/single-sign-on.ts';
import { ROLE_NAMES } from '../../src/auth/roles.ts';

test('single sign-on comes back to the console page asked for, with its query; any other path comes back to the overview', () => {
  assert.equal(singleSignOnHref('/console/okms?state=stuck&customer=acme'), `/auth/oidc/login?return_to=${encodeURIComponent('/console/okms?state=stuck&customer=acme')}`);
  assert.equal(singleSignOnHref('/console/'), '/auth/oidc/login?return_to=%2Fconsole%2F');
  assert.equal(singleSignOnHref('/console'), '/auth/oidc/login?return_to=%2Fconsole');
  for (const elsewhere of ['/', '/consoles/x', '/auth/oidc/login', '/console//evil.example', '/api/v1/me']) {
    assert.equal(singleSignOnHref(elsewhere), '/auth/oidc/login?return_to=%2Fconsole%2F', elsewhere);
  }
});

test('a person’s claims are what /api/v1/me says: their scopes and customer, admin only with the admin scope, no expiry a script could know', () => {
  const operator = claimsOfPerson({ actor: { kind: 'person', id: '7', name: 'Alice Operator' }, role: 'device-operator', customer: null, scopes: ['acl:read', 'lock:read', 'okm:read', 'okm:write'] });
  const admin = claimsOfPerson({ actor: { kind: 'person', id: '8', name: 'Ada Admin' }, role: 'admin', customer: null, scopes: ['admin'] });
  const viewer = claimsOfPerson({ actor: { kind: 'person', id: '9', name: 'Bob' }, role: 'viewer', customer: 'acme', scopes: ['okm:read'] });

  assert.deepEqual(operator, { scopes: ['acl:read', 'lock:read', 'okm:read', 'okm:write'], customer: null, isAdmin: false, expiresAt: null, subject: 'Alice Operator', tokenId: null });
  assert.equal(admin.isAdmin, true);
  assert.equal(viewer.customer, 'acme');
});

test('the sign-in page says why a person’s session ended in the API’s words, without saying "sign in again" twice', () => {
  assert.equal(sessionEndedReason('Session has ended: sign in again'), 'You were signed out: session has ended. Sign in again to go on.');
  assert.equal(sessionEndedReason('Session was idle too long: sign in again'), 'You were signed out: session was idle too long. Sign in again to go on.');
  assert.equal(sessionEndedReason('Something else'), 'You were signed out: something else. Sign in again to go on.');
  assert.equal(noAccessReason('Your session gives no access: no role is bound to you'), 'keyfleet refused your session (403): Your session gives no access: no role is bound to you');
});

test('the People & access page offers the server’s roles, in its order', () => {
  assert.deepEqual(CONSOLE_ROLE_NAMES, ROLE_NAMES);
});

test('who added a role binding reads as a name where the page knows one, else by kind', () => {
  const names = { people: new Map([['7', 'Ada Admin']]), tokens: new Map([['0cbc25a9', 'admin']]) };

  assert.equal(actorLabel('person:7', names), 'Ada Admin');
  assert.equal(actorLabel('person:9', names), 'person 9');
  assert.equal(actorLabel('token:0cbc25a9', names), 'admin');
  assert.equal(actorLabel('token:ffff', names), 'an API token');
  assert.equal(actorLabel('cli:root', names), 'the command line (root)');
  assert.equal(actorLabel('system:session-refresh', names), 'keyfleet');
  assert.equal(actorLabel('odd', names), 'odd');
});
