import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RANDOM_PART_PATTERN, matchesTokenHash, randomTokenPart, tokenHash } from '../../src/shared/secret-tokens.ts';

describe('secret tokens', () => {
  test('a random part is 43 base64url characters, new each time', () => {
    const first = randomTokenPart();

    assert.match(first, new RegExp(`^${RANDOM_PART_PATTERN}$`));
    assert.notEqual(randomTokenPart(), first);
  });

  test('the stored hash is the lowercase hex SHA-256 of the whole token', () => {
    assert.equal(tokenHash('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  test('a token matches its own hash only', () => {
    const hash = tokenHash('kf_test_one');

    assert.equal(matchesTokenHash('kf_test_one', hash), true);
    assert.equal(matchesTokenHash('kf_test_two', hash), false);
  });

  test('nothing matches when no hash is stored, or when the stored value is not a SHA-256', () => {
    assert.equal(matchesTokenHash('kf_test_one', null), false);
    assert.equal(matchesTokenHash('kf_test_one', undefined), false);
    assert.equal(matchesTokenHash('kf_test_one', 'abcd'), false);
  });
});
