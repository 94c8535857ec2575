import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { GENESIS_HASH, chainEntry, entryHash, verifyChain, type ChainedEntry } from '../../src/audit/chain.ts';

/** Entries as a change would record them: an action, an entity, before and after. */
const content = fc.record({
  action: fc.constantFrom('acl.updated', 'okm.configured', 'rollout.approved', 'token.revoked'),
  entity: fc.record({ type: fc.constantFrom('acl', 'okm', 'rollout'), id: fc.string({ minLength: 1, maxLength: 12 }) }),
  before: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: null }),
  after: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: null }),
});

function chainOf(contents: readonly Record<string, unknown>[]): ChainedEntry[] {
  const entries: ChainedEntry[] = [];
  for (const each of contents) entries.push(chainEntry(entries.at(-1), each));
  return entries;
}

/** A chain of 2–30 entries and a position in it. */
const chainAndIndex = fc.array(content, { minLength: 2, maxLength: 30 }).chain((contents) => fc.tuple(fc.constant(chainOf(contents)), fc.nat({ max: contents.length - 1 })));

describe('the audit hash chain', () => {
  test('a chain as written verifies, from its beginning and from any entry as an anchor, with checkpoints at any of its entries', () => {
    fc.assert(
      fc.property(chainAndIndex, ([entries, index]) => {
        const checkpoints = [{ seq: entries[index]!.id, hash: entries[index]!.hash }];
        return verifyChain(entries, { checkpoints }) === undefined && verifyChain(entries.slice(index + 1), { start: entries[index] }) === undefined;
      }),
    );
  });

  test('the first entry links to the genesis hash, each next one to the hash before it, and each hash covers every member but itself', () => {
    const [first, second] = chainOf([{ action: 'acl.updated' }, { action: 'acl.deleted' }]);

    assert.equal(first!.prev_hash, GENESIS_HASH);
    assert.equal(second!.prev_hash, first!.hash);
    assert.equal(entryHash(first!), first!.hash);
    assert.notEqual(entryHash({ ...first!, action: 'acl.created' }), first!.hash);
  });

  test('an entry edited by hand is named altered, at its seq', () => {
    fc.assert(
      fc.property(chainAndIndex, fc.constantFrom('action', 'entity', 'before', 'after'), ([entries, index], member) => {
        const edited = entries.map((entry, at) => (at === index ? { ...entry, [member]: { edited: true } } : entry));
        return fc.stringify(verifyChain(edited)) === fc.stringify({ kind: 'altered', seq: index + 1, detail: `entry ${index + 1} does not hash to its stored hash: it was changed after it was written` });
      }),
    );
  });

  test('an entry deleted is named: the gap at its seq', () => {
    fc.assert(
      fc.property(chainAndIndex.filter(([entries, index]) => index < entries.length - 1), ([entries, index]) => {
        const problem = verifyChain(entries.filter((_entry, at) => at !== index));
        return problem?.kind === 'deleted' && problem.seq === index + 1;
      }),
    );
  });

  test('a tail deleted after a signed checkpoint is named missing_tail; before any checkpoint it cannot be told from a shorter chain', () => {
    fc.assert(
      fc.property(chainAndIndex, ([entries, index]) => {
        const kept = entries.slice(0, index);
        const last = entries.at(-1)!;
        const problem = verifyChain(kept, { checkpoints: [{ seq: last.id, hash: last.hash }] });
        return problem?.kind === 'missing_tail' && problem.seq === index + 1 && verifyChain(kept) === undefined;
      }),
    );
  });

  test('an entry made elsewhere and slipped in, with a seq of its own or one already taken, is named inserted', () => {
    fc.assert(
      fc.property(chainAndIndex, content, ([entries, index], foreign) => {
        const elsewhere = chainEntry({ id: index, hash: 'f'.repeat(64) }, foreign);
        // In the place of entry index + 1, the following ones moved one on (their ids as stored).
        const withForeign = [...entries.slice(0, index), elsewhere, ...entries.slice(index)];
        const problem = verifyChain(withForeign);
        return problem?.kind === 'inserted' && problem.seq === index + 1;
      }),
    );
  });

  test('two neighbours whose seqs were exchanged by hand are named reordered, at the first of them', () => {
    fc.assert(
      fc.property(chainAndIndex.filter(([entries, index]) => index < entries.length - 1), ([entries, index]) => {
        const swapped = [...entries];
        swapped[index] = { ...entries[index + 1]!, id: index + 1 };
        swapped[index + 1] = { ...entries[index]!, id: index + 2 };
        const problem = verifyChain(swapped);
        return problem?.kind === 'reordered' && problem.seq === index + 1;
      }),
    );
  });

  test('a chain rewritten from some entry on with fresh hashes verifies link by link, and its signed checkpoint names the rewrite', () => {
    fc.assert(
      fc.property(chainAndIndex, ([entries, index]) => {
        const rewritten = entries.slice(0, index);
        for (const entry of entries.slice(index)) {
          const { id: _id, prev_hash: _prev, hash: _hash, ...rest } = entry;
          rewritten.push(chainEntry(rewritten.at(-1), { ...rest, action: 'rewritten' }));
        }
        const last = entries.at(-1)!;
        const problem = verifyChain(rewritten, { checkpoints: [{ seq: last.id, hash: last.hash }] });
        return verifyChain(rewritten) === undefined && problem?.kind === 'altered' && problem.seq === last.id;
      }),
    );
  });
});
