import assert from 'node:assert/strict';
import { test } from 'node:test';
import { correctionWords, nextOfferWords, nextPollWords, offerSourceWords, retryPolicyWords, type FirmwareOfferWords } from '../../console/src/correction-words.ts';

const FLEET_POLICY = { offers: 3, backoff_polls: [1, 2, 4, 8], max_backoff_polls: 32, from: 'fleet' as const };
const offer = (overrides: Partial<FirmwareOfferWords>): FirmwareOfferWords => ({
  resolver: 'kasFirmware',
  kind: 'kas',
  version: '3.1.0',
  source: 'fleet_latest',
  pin: null,
  rollout: null,
  retry_policy: FLEET_POLICY,
  hold: null,
  ...overrides,
});
const time = (iso: string) => iso.slice(11, 16);

test('a correction reads as what the device is told, never as JSON; a users’ assets list by its size, its PIN hashes never shown', () => {
  const pinHash = 'a3f1c2d4e5b6a798011223344556677';
  assert.equal(correctionWords('usersAssets', { usersAssets: [{ user_id: 1, pin_hash: pinHash }, { user_id: 2, pin_hash: pinHash }], usersAssetsDigest: 'ab' }), 'replace its users’ assets: 2 users (PIN hashes not shown)');
  assert.equal(correctionWords('kasFirmware', { kasFirmware: { version: '3.3.0', url: 'https://x/3.3.0.bin', sha256: 'ff' } }), 'install KAS firmware 3.3.0');
  assert.equal(correctionWords('cacheMode', { cacheMode: 2 }), 'set cache mode 2');
  assert.equal(correctionWords('keyCheckoutWindowTime', { keyCheckoutWindowTime: 30, keyCheckoutWindowContact: 'open' }), 'set the key checkout window to 30 s, contact open');
  assert.equal(correctionWords('assetList', { assetList: ['L1'], assetListDigest: 'ab' }), 'replace its asset list: 1 lock');
  assert.equal(correctionWords('message', { message: { id: 4, type: 'delete-assets', payload: {} } }), 'deliver the delete-assets message waiting');
  assert.equal(correctionWords('pollingInterval', { pollingInterval: 150 }), 'poll every 150 s');
  assert.equal(correctionWords('kasDateTime', { kasDateTime: 1 }), 'set its clock to the server time');
  assert.equal(correctionWords('somethingNew', { somethingNew: 1 }), 'set somethingNew');
  assert.ok(!correctionWords('usersAssets', { usersAssets: [{ pin_hash: pinHash }] }).includes(pinHash));
});

test('the source of an offer names the rollout or the pin behind it, never "fleet latest" for a rollout’s version', () => {
  assert.equal(offerSourceWords(offer({ version: '3.3.0', source: 'rollout', rollout: { id: 12, state: 'finished', version: '3.3.0', offering: true } })), '3.3.0 from rollout #12 (finished)');
  assert.equal(offerSourceWords(offer({ version: '3.3.0', source: 'pin', pin: '3.3.0' })), 'pinned to 3.3.0');
  assert.equal(offerSourceWords(offer({ version: null, source: 'pin', pin: '9.9.9' })), 'pinned to 9.9.9 (not in the catalog: nothing offered)');
  assert.equal(offerSourceWords(offer({})), 'fleet latest 3.1.0');
  assert.equal(offerSourceWords(offer({ rollout: { id: 3, state: 'paused', version: '3.3.0', offering: false } })), 'fleet latest 3.1.0; in rollout #3 (paused) of 3.3.0, not offering it yet');
  assert.equal(offerSourceWords(offer({ version: null, source: 'none' })), 'none: no release of this kind');
});

test('the retry policy reads with its numbers and whose it is; a hold says at which poll the offer comes again', () => {
  assert.equal(retryPolicyWords(FLEET_POLICY), 'the fleet default retry policy: after 3 offers not taken, held back 1, 2, 4, 8 polls in turn (at most 32)');
  assert.equal(retryPolicyWords({ ...FLEET_POLICY, offers: 1, from: 'rollout' }), 'the rollout’s retry policy: after 1 offer not taken, held back 1, 2, 4, 8 polls in turn (at most 32)');
  assert.equal(retryPolicyWords({ ...FLEET_POLICY, offers: 0, from: 'customer' }), 'the customer’s retry policy: offers are never held back');
  const hold = { rounds: 2, offered: 6, held_back: true, next_offer_poll: 10, polls_until_offer: 3, next_offer_at: '2026-11-28T14:05:00.000Z' };
  assert.equal(nextOfferWords(hold, time), '6 offers not taken in 2 rounds; held back, offered again on poll 10 (the 3rd poll from now, about 14:05)');
  assert.equal(nextOfferWords({ ...hold, held_back: false, polls_until_offer: 1, next_offer_at: null }, time), '6 offers not taken in 2 rounds; offered again on poll 10 (the next poll)');
});

test('"Next poll" never reads "nothing to correct" while an offer is held back or the OKM is stuck', () => {
  const held = offer({ hold: { rounds: 1, offered: 3, held_back: true, next_offer_poll: 5, polls_until_offer: 2, next_offer_at: null } });
  assert.equal(nextPollWords(null, 'kasFirmware', [held], time), 'nothing else to correct; the KAS firmware offer: 3 offers not taken in 1 round; held back, offered again on poll 5 (the 2nd poll from now)');
  assert.equal(nextPollWords(null, 'pollingInterval', [offer({})], time), 'nothing to correct now, but stuck on pollingInterval: it did not take what it was sent');
  assert.equal(nextPollWords(null, null, [offer({})], time), 'nothing to correct');
  assert.equal(nextPollWords({ name: 'cacheMode', correction: { cacheMode: 2 } }, null, [], time), 'set cache mode 2');
});
