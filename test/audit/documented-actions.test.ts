import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { AUDIT_ACTIONS } from '../../src/audit/actions.ts';
import { REDACTED_MEMBERS } from '../../src/audit/redaction.ts';

const guide = readFileSync(new URL('../../docs/audit-trail.md', import.meta.url), 'utf8');

test('docs/audit-trail.md lists every action with its entity, and no action the trail does not record', () => {
  const documented = [...guide.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \| ([a-z_]+) \|/gm)].map(([, action, entity]) => [action!, entity!]);
  assert.deepEqual(documented, Object.entries(AUDIT_ACTIONS).map(([action, { entity }]) => [action, entity]));
});

test('docs/audit-trail.md names every member the trail redacts', () => {
  for (const member of REDACTED_MEMBERS) assert.ok(guide.includes(`\`${member}\``), member);
});
