import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalDigest, canonicalJson, canonicalTextDigest } from '../../src/shared/canonical-json.ts';

// Devices compare list digests with their own: every expected value below is a literal, from
// RFC 8785 itself or hashed outside keyfleet (`printf '%s' '<text>' | sha256sum`).

test('numbers take the RFC 8785 form (appendix B: IEEE 754 bit patterns and their canonical text)', () => {
  const vectors: [string, string][] = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];

  for (const [bits, text] of vectors) {
    assert.equal(canonicalJson(Buffer.from(bits, 'hex').readDoubleBE(0)), text, bits);
  }
});

test('members are sorted by UTF-16 code units, strings escaped minimally (RFC 8785 sections 3.2.2 and 3.2.3)', () => {
  const mixed = JSON.parse(
    '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
      '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  ) as unknown;
  const sorting = JSON.parse(
    '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",' +
      '"\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
  ) as unknown;

  assert.equal(
    canonicalJson(mixed),
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
  );
  assert.equal(
    canonicalJson(sorting),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
      '"\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  );
});

test('a digest is the lowercase hex SHA-256 of the canonical UTF-8 text', () => {
  assert.equal(canonicalTextDigest(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.equal(canonicalDigest([]), '4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945');
  // ["L-001","L-002"]
  assert.equal(canonicalDigest(['L-001', 'L-002']), 'fdc4a095f3aed1dbe5f3c93b99deb891b16406de12d455718e3d2d1674b57fcb');
  // [{"lock":"Tür-1","slot":2}]: member order and non-ASCII text as a device must hash them
  assert.equal(canonicalDigest([{ slot: 2, lock: 'Tür-1' }]), 'deee5bb84fc3ea6325141868335cf6e400a0bfbb34ce7bf57a928178c6ac1386');
});

test('a user asset list digests as a device computes it, whatever order the members were written in', () => {
  // [{"permissions":[1,17],"pin_hash":"abc123","user_id":7}]
  assert.equal(
    canonicalDigest([{ user_id: 7, pin_hash: 'abc123', permissions: [1, 17] }]),
    'afad4518d21a28ac1868d1d9d3445870bd97625df9058b29994fd7b3d75f0124',
  );
});
