import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aclLabel, matchCountText, noMatchText, queryFromSearch, searchFromQuery, searchParameters, searchProblem } from '../../console/src/acl-search.ts';

test('a search goes from the URL to the API and back: one field, trimmed, the customer kept', () => {
  assert.deepEqual(searchFromQuery({ customer: 'acme', user_id: ' 42 ' }), { field: 'user_id', text: '42' });
  assert.equal(searchFromQuery({ customer: 'acme', lock: '' }), null);
  assert.equal(queryFromSearch('acme', { field: 'lock', text: 'DOOR-1' }), '?customer=acme&lock=DOOR-1');
  assert.equal(queryFromSearch(undefined, { field: 'name_contains', text: 'Store 412' }), '?name_contains=Store+412');
  assert.equal(queryFromSearch(undefined, null), '');
  assert.deepEqual(searchParameters({ field: 'user_id', text: '42' }), { user_id: 42 });
  assert.deepEqual(searchParameters({ field: 'name_contains', text: 'köln' }), { name_contains: 'köln' });
  assert.deepEqual(searchParameters(null), {});
});

test('the form refuses, in plain words, what the API would refuse', () => {
  assert.equal(searchProblem({ field: 'user_id', text: '999999999' }), null);
  assert.match(searchProblem({ field: 'user_id', text: '1000000000' })!, /whole number from 0 to 999 999 999/);
  assert.match(searchProblem({ field: 'user_id', text: '12ab' })!, /whole number/);
  assert.match(searchProblem({ field: 'lock', text: 'DOOR 1' })!, /letters, digits/);
  assert.equal(searchProblem({ field: 'lock', text: 'DOOR-1' }), null);
  assert.match(searchProblem({ field: 'name_contains', text: 'x'.repeat(101) })!, /at most 100/);
  assert.match(searchProblem({ field: 'name_contains', text: '' })!, /Enter/);
});

test('an ACL is named by its name, else its id; the list says what a search found', () => {
  assert.equal(aclLabel({ id: 'f00d', name: 'Store 412' }), 'Store 412');
  assert.equal(aclLabel({ id: 'f00d' }), 'f00d');
  assert.equal(matchCountText(1, true), '1 ACL matches');
  assert.equal(matchCountText(2, true), '2 ACLs match');
  assert.equal(matchCountText(20, false), null);
  assert.equal(noMatchText('acme', { field: 'lock', text: 'X-1' }), 'No ACL of acme holds lock X-1.');
});
