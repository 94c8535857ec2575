import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { compareFirmwareVersions, parseFirmwareVersion } from '../../../src/firmware/version.ts';
import { newerFirmware } from '../../../src/device/resolvers/firmware-offer.ts';
import { firmwareOffer } from './fixtures.ts';

const version = fc.oneof(
  fc.array(fc.constantFrom('0', '1', '2', '9', '10', '02'), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.')),
  fc.constantFrom('', 'abc', '2.10.0-beta', '1.2.3.4.5', '2..1', ' 2.1'),
);

test('a release is offered exactly when the reported version is unknown, unparsable or older by number, whether or not its text is the offer’s', () => {
  fc.assert(
    fc.property(version.filter((text) => parseFirmwareVersion(text) !== undefined), fc.option(version, { nil: undefined }), fc.boolean(), (offered, reported, same) => {
      const offer = firmwareOffer(offered);
      const report = same ? offered : reported;
      const parts = parseFirmwareVersion(report);
      const expected = parts !== undefined && compareFirmwareVersions(offer.parts, parts) <= 0 ? undefined : { version: offer.version, url: offer.url, sha256: offer.sha256 };
      assert.deepEqual(newerFirmware(offer, report), expected);
    }),
    { numRuns: 3000 },
  );
});

test('no offer, no correction, whatever is reported', () => {
  for (const reported of [undefined, '', '1.0']) assert.equal(newerFirmware(null, reported), undefined);
});
