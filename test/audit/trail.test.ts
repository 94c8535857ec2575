import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { entryHash } from '../../src/audit/chain.ts';
import { canonicalEntryText, entryContentOfRow } from '../../src/audit/trail.ts';
import { canonicalJson, canonicalTextDigest } from '../../src/shared/canonical-json.ts';

/** Rows as recordChanges writes them: any text (surrogates, controls, quotes included), before and after canonical or null. */
const text = fc.string({ unit: 'binary', maxLength: 24 });
const storedJson = fc.option(fc.jsonValue({ maxDepth: 3 }).map((value) => canonicalJson(value)), { nil: null });
const row = fc.record({
  time: fc.integer({ min: 0, max: 8_640_000_000_000 }),
  actor_kind: fc.constantFrom('token', 'person', 'api_key', 'cli', 'system'),
  actor_id: text,
  actor_name: text,
  customer: fc.option(text, { nil: null }),
  action: text,
  entity_type: text,
  entity_id: text,
  before_json: storedJson,
  after_json: storedJson,
  request_id: fc.option(text, { nil: null }),
  ip: fc.option(text, { nil: null }),
  user_agent: fc.option(text, { nil: null }),
});
const hash = fc.stringMatching(/^[0-9a-f]{64}$/);

test('the chainer\'s text of an entry is the RFC 8785 text of the entry as the API shows it, so that what it hashes is what verify checks', () => {
  fc.assert(
    fc.property(row, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), hash, (stored, id, prevHash) => {
      const entry = { ...entryContentOfRow(stored), id, prev_hash: prevHash };
      const textOfRow = canonicalEntryText(stored, id, prevHash);
      assert.equal(textOfRow, canonicalJson(entry));
      assert.equal(canonicalTextDigest(textOfRow), entryHash(entry));
    }),
    { numRuns: 2_000 },
  );
});
