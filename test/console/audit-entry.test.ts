import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  accessSummary,
  ACTION_LABELS,
  ENTITY_LABELS,
  actionLabel,
  actorFilter,
  actorProblem,
  actorText,
  changeLines,
  entityPath,
  exportFileName,
  exportHref,
  filtersOf,
  historyHref,
  isoFromLocalInput,
  localInputValue,
  rangeProblem,
  valueText,
} from '../../console/src/audit-entry.ts';
import { AUDIT_ACTION_NAMES, AUDIT_ENTITY_TYPES } from '../../src/audit/actions.ts';

const acl = (before: unknown, after: unknown) => changeLines({ entity: { type: 'acl', id: 'a1' }, before, after });
const okm = (before: unknown, after: unknown) => changeLines({ entity: { type: 'okm', id: 'OKM-1' }, before, after });

test('a permission changed on one cell reads as the user, the lock, and the permission before and after', () => {
  assert.deepEqual(acl({ users: { 1234: { access: { L7: 0 } } } }, { users: { 1234: { access: { L7: 1 } } } }), ['user 1234: lock L7 no access → access']);
  assert.deepEqual(acl({ users: { 1234: { access: { L7: 1, L8: 17 } } } }, { users: { 1234: { access: { L7: 17, L8: 0 } } } }), [
    'user 1234: lock L7 access → dual authentication',
    'user 1234: lock L8 dual authentication → no access',
  ]);
});

test('a user added reads with what they may open, a user removed as removed, in the order of their ids', () => {
  const user = (access: Record<string, number>) => ({ pin_hash: '[redacted]', auth_time: 8, sounder: false, access });
  assert.deepEqual(acl({ users: { 9: user({ L1: 1 }), 55: null, 100: null } }, { users: { 9: null, 55: user({ L1: 1, L7: 1 }), 100: user({ L1: 1, L2: 17 }) } }), [
    'user 9 removed',
    'user 55 added (access to L1, L7)',
    'user 100 added (access to L1; dual authentication at L2)',
  ]);
  assert.deepEqual(acl({ users: { 3: null } }, { users: { 3: user({}) } }), ['user 3 added (no access)']);
});

test("locks added and removed, the name, the OKM, a user's settings and a changed PIN each read as a line", () => {
  assert.deepEqual(
    acl(
      { name: 'Store 1', okm_id: null, locks: ['L3'], users: { 1234: { pin_hash: '[redacted]', auth_time: 8 } }, user_data: null },
      { name: 'Store 412', okm_id: 'OKM-9', locks: ['L9'], users: { 1234: { pin_hash: '[redacted: changed]', auth_time: 12 } }, user_data: { site: 'Leeds' } },
    ),
    ['name: Store 1 → Store 412', 'linked OKM: none → OKM-9', 'lock L3 removed', 'lock L9 added', 'user 1234: PIN changed', 'user 1234: auth_time: 8 → 12', 'user_data: none → {"site":"Leeds"}'],
  );
});

test('an ACL created or deleted reads as what it granted: name, OKM, locks and each user', () => {
  const whole = {
    name: 'Store 412',
    okm_id: 'OKM-9',
    locks: ['L1', 'L7'],
    users: { 55: { pin_hash: '[redacted]', access: { L1: 1, L7: 17 } }, 7: { pin_hash: '[redacted]', access: {} } },
  };
  const lines = ['name: Store 412', 'linked OKM: OKM-9', '2 locks: L1, L7', 'user 7: no access', 'user 55: access to L1; dual authentication at L7'];
  assert.deepEqual(acl(null, whole), lines);
  assert.deepEqual(acl(whole, null), lines);
  assert.deepEqual(acl(null, { name: null, okm_id: null, locks: [], users: {} }), ['no locks', 'no users']);
});

test('a long list of locks names the first ten and counts the rest', () => {
  const locks = Array.from({ length: 25 }, (_, index) => `L${index + 1}`);
  assert.equal(accessSummary(Object.fromEntries(locks.map((lock) => [lock, 1]))), 'access to L1, L2, L3, L4, L5, L6, L7, L8, L9, L10 and 15 more');
  assert.equal(acl(null, { locks, users: {} })[0], '25 locks: L1, L2, L3, L4, L5, L6, L7, L8, L9, L10 and 15 more');
});

test('any other entity reads field by field; objects member by member; a creation or deletion as the fields it held', () => {
  assert.deepEqual(okm({ polling_interval: 150 }, { polling_interval: 300 }), ['polling_interval: 150 → 300']);
  assert.deepEqual(okm({ customer: null, firmware: { kas: '2.4.0' } }, { customer: 'acme', firmware: { kas: '2.4.1' } }), ['customer: none → acme', 'firmware.kas: 2.4.0 → 2.4.1']);
  assert.deepEqual(okm({ status_urls: [] }, { status_urls: ['https://a.example', 'https://b.example'] }), ['status_urls: none → https://a.example, https://b.example']);
  assert.deepEqual(changeLines({ entity: { type: 'rollout', id: '3' }, before: { state: 'ready', current_group: null }, after: { state: 'running', current_group: 0, state_reason: 'operator' } }), [
    'state: ready → running',
    'current_group: none → 0',
    'state_reason: none → operator',
  ]);
  assert.deepEqual(okm(null, { polling_interval: 150, key_checkout_window: { time: 30 } }), ['polling_interval: 150', 'key_checkout_window.time: 30']);
  assert.deepEqual(okm({ polling_interval: 150 }, null), ['polling_interval: 150']);
  assert.deepEqual(okm(null, null), []);
});

test('secrets are never shown: a redacted value reads "secret", a changed one "… changed", also inside JSON', () => {
  assert.deepEqual(changeLines({ entity: { type: 'webhook_endpoint', id: '4' }, before: { secret: '[redacted]', url: 'https://a' }, after: { secret: '[redacted: changed]', url: 'https://b' } }), [
    'secret changed',
    'url: https://a → https://b',
  ]);
  assert.deepEqual(changeLines({ entity: { type: 'api_key', id: '2' }, before: null, after: { name: 'door app', secret_hash: '[redacted]' } }), ['name: door app', 'secret_hash: secret']);
  assert.equal(valueText([{ token: '[redacted]' }]), '[{"token":"secret"}]');
  for (const line of changeLines({ entity: { type: 'acl', id: 'a' }, before: null, after: { locks: [], users: { 1: { pin_hash: '[redacted]', access: {} } } } })) assert.doesNotMatch(line, /redacted/);
});

test('values read for people: none, (empty), lists, and a long value cut', () => {
  assert.equal(valueText(null), 'none');
  assert.equal(valueText(''), '(empty)');
  assert.equal(valueText(false), 'false');
  assert.equal(valueText(['a', 1]), 'a, 1');
  assert.equal(valueText('x'.repeat(400)).length, 160);
});

test('every action the API records has words; the actor reads as name and kind', () => {
  assert.deepEqual(Object.keys(ACTION_LABELS).sort(), [...AUDIT_ACTION_NAMES].sort());
  assert.deepEqual(Object.keys(ENTITY_LABELS).sort(), [...AUDIT_ENTITY_TYPES].sort());
  assert.equal(actionLabel('acl.updated'), 'ACL changed');
  assert.equal(actionLabel('future.thing'), 'future.thing');
  assert.equal(actorText({ kind: 'person', id: '7', name: 'Alice Admin' }), 'Alice Admin (person)');
  assert.equal(actorText({ kind: 'cli', id: 'root', name: 'root' }), 'root (command line)');
  assert.equal(actorFilter({ kind: 'token', id: 'abc', name: 'ci' }), 'token:abc');
});

test('an entity links to its console page where it has one, a deleted one to none', () => {
  const entry = (action: string, type: string, id: string, customer: string | null = 'acme') => ({ action, customer, entity: { type, id } });
  assert.equal(entityPath(entry('okm.configured', 'okm', 'OKM 1'), true), '/console/okms/OKM%201');
  assert.equal(entityPath(entry('acl.updated', 'acl', 'a1'), true), '/console/acls/a1?customer=acme');
  assert.equal(entityPath(entry('acl.updated', 'acl', 'a1'), false), '/console/acls/a1');
  assert.equal(entityPath(entry('acl.deleted', 'acl', 'a1'), true), null);
  assert.equal(entityPath(entry('rollout.started', 'rollout', '12'), false), '/console/rollouts/12');
  assert.equal(entityPath(entry('dlock.enrolled', 'dlock', 'L7'), false), '/console/locks/L7');
  assert.equal(entityPath(entry('token.issued', 'token', 'x'), true), null);
});

test("the History page's address keeps the filters; the export selects the same", () => {
  const filters = filtersOf({ entity_type: 'acl', entity_id: ' a1 ', actor: '', limit: '5', since: '2026-01-01T00:00:00.000Z' });
  assert.deepEqual(filters, { entity_type: 'acl', entity_id: 'a1', since: '2026-01-01T00:00:00.000Z' });
  assert.equal(historyHref(filters), '/console/history?entity_type=acl&entity_id=a1&since=2026-01-01T00%3A00%3A00.000Z');
  assert.equal(historyHref(), '/console/history');
  assert.equal(exportHref(filters, 'csv'), '/api/v1/audit-log/export?entity_type=acl&entity_id=a1&since=2026-01-01T00%3A00%3A00.000Z&format=csv');
  assert.equal(exportFileName('csv', Date.parse('2026-05-04T23:00:00Z')), 'keyfleet-audit-2026-05-04.csv');
});

test('an actor filter must be kind:id, and until not before since', () => {
  assert.equal(actorProblem(''), null);
  assert.equal(actorProblem('person:12'), null);
  assert.equal(actorProblem('system:keyfleet'), null);
  assert.match(actorProblem('Alice')!, /kind and the id/);
  assert.match(actorProblem('robot:1')!, /kind and the id/);
  assert.equal(rangeProblem('2026-01-02T00:00:00Z', '2026-01-01T00:00:00Z'), '“Until” must not be before “since”.');
  assert.equal(rangeProblem('2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'), null);
  assert.equal(rangeProblem(undefined, '2026-01-01T00:00:00Z'), null);
});

test("a time goes to a datetime-local control in the browser's zone and back unchanged (to the minute)", () => {
  const iso = '2026-05-04T09:41:00.000Z';
  const shown = localInputValue(iso);
  assert.match(shown, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/);
  assert.equal(isoFromLocalInput(shown), iso);
  assert.equal(localInputValue(undefined), '');
  assert.equal(localInputValue('not a time'), '');
  assert.equal(isoFromLocalInput(''), undefined);
  assert.equal(isoFromLocalInput('nonsense'), undefined);
});
