import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { queueMessage } from '../../src/okm/messages-repository.ts';
import { UNCONFIGURED_OKM, type OkmSettings } from '../../src/okm/model.ts';
import { insertOkm, updateOkmSettings } from '../../src/okm/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { addRelease, allMessages, freezeServerClock, newSerial, poll, SERVER_TIME, SHA256, type DeviceParameters } from './config-helpers.ts';

const ASSETS = ['L-001', 'L-002'];
const USERS = [{ user_id: 7, pin_hash: 'abc123', permissions: [1, 17] }];

// What a device computes: SHA-256 of the RFC 8785 text, written out by hand and hashed outside
// keyfleet (`printf '%s' '<text>' | sha256sum`), so that a changed digest breaks these tests.
const DIGESTS = {
  empty: '4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945', // []
  assetList: {
    items: 'fdc4a095f3aed1dbe5f3c93b99deb891b16406de12d455718e3d2d1674b57fcb', // ["L-001","L-002"]
    more: 'f0f7c619f088362b314ac7cc731fb50bf5d296fcac54d19647388d8138295e8f', // ["L-001","L-002","more"]
  },
  usersAssets: {
    items: 'afad4518d21a28ac1868d1d9d3445870bd97625df9058b29994fd7b3d75f0124', // [{"permissions":[1,17],"pin_hash":"abc123","user_id":7}]
    more: '687d971f83006ca0867662a8cd082092b72336081baebf356a586c6bf30a1c4c', // [{"permissions":[1,17],"pin_hash":"abc123","user_id":7},"more"]
  },
};

const CONFIGURED: OkmSettings = {
  ...UNCONFIGURED_OKM,
  cacheMode: 2,
  keyCheckoutWindow: { time: 30, contact: 'closed' },
  auditingEnabled: true,
  assetList: ASSETS,
  usersAssets: USERS,
  pollingInterval: 60,
};

/** What a device in step with CONFIGURED and the fleet firmware below reports. */
const IN_SYNC: DeviceParameters = {
  kasFirmware: '2.10.0',
  kasDateTime: SERVER_TIME,
  cacheMode: 2,
  keyCheckoutWindowTime: 30,
  keyCheckoutWindowContact: 'closed',
  retailCfg: 2,
  assetList: DIGESTS.assetList.items,
  usersAssets: DIGESTS.usersAssets.items,
  auditUrl: '/api/v1/audit',
  pollingInterval: 60,
  batchKeyFirmware: '1.2',
  wirelessKeyFirmware: '3.0',
  configUrl: '/api/v1/config',
};

const UNCONFIGURED_IN_SYNC: DeviceParameters = { kasFirmware: '2.10.0', kasDateTime: SERVER_TIME, cacheMode: 1, auditUrl: '/api/v1/audit', pollingInterval: 150, batchKeyFirmware: '1.2', wirelessKeyFirmware: '3.0' };

const firmwareOffer = (kind: string, version: string) => ({ version, url: `https://firmware.example/${kind}/${version}.bin`, sha256: SHA256 });

forEachDatabase('config resolvers', (kind) => {
  let t: TestApp;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp(kind, { PUBLIC_BASE_URL: 'https://fleet.example' });
    await addRelease(t.db, 'kas', '2.9.9');
    await addRelease(t.db, 'kas', '2.10.0', { fleetLatest: true });
    await addRelease(t.db, 'batch_key', '1.2', { fleetLatest: true });
    await addRelease(t.db, 'wireless_key', '3.0', { url: null, fleetLatest: true });
  });
  after(() => t.close());

  async function okmWith(settings: Partial<OkmSettings> = {}): Promise<string> {
    const serial = newSerial();
    await insertOkm(t.db, serial, null, { ...CONFIGURED, ...settings }, SERVER_TIME);
    return serial;
  }

  async function answer(serial: string, parameters: DeviceParameters): Promise<unknown> {
    const response = await poll(t, serial, parameters);
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    return response.json();
  }

  test('when the device matches its configuration, the answer is {}', async () => {
    assert.deepEqual(await answer(await okmWith(), IN_SYNC), {});
  });

  test('when an unconfigured device is in step with the fleet defaults, the answer is {}', async () => {
    const serial = newSerial();
    await insertOkm(t.db, serial, null, UNCONFIGURED_OKM, SERVER_TIME);

    assert.deepEqual(await answer(serial, UNCONFIGURED_IN_SYNC), {});
  });

  describe('2 buffered message', () => {
    test('when messages are queued, each poll sends the oldest one and marks it delivered, then {}', async () => {
      const serial = await okmWith();
      const first = await queueMessage(t.db, serial, 'delete-assets', null, SERVER_TIME - 2);
      const second = await queueMessage(t.db, serial, 'notice', { text: 'hello' }, SERVER_TIME - 1);

      const answers = [await answer(serial, IN_SYNC), await answer(serial, IN_SYNC), await answer(serial, IN_SYNC)];

      assert.deepEqual(answers, [
        { message: { id: first.id, type: 'delete-assets', payload: null } },
        { message: { id: second.id, type: 'notice', payload: { text: 'hello' } } },
        {},
      ]);
      assert.deepEqual(
        (await allMessages(t.db, serial)).map((message) => message.deliveredAt),
        [SERVER_TIME, SERVER_TIME],
      );
    });

    test('when several polls arrive at once, one message is sent once', async () => {
      const serial = await okmWith();
      const message = await queueMessage(t.db, serial, 'delete-assets');

      const answers = (await Promise.all(Array.from({ length: 6 }, () => answer(serial, IN_SYNC)))) as object[];

      assert.equal(answers.filter((body) => 'message' in body).length, 1);
      assert.deepEqual(answers.filter((body) => !('message' in body)), Array.from({ length: 5 }, () => ({})));
      assert.ok((await allMessages(t.db, serial)).every((stored) => stored.id !== message.id || stored.deliveredAt !== null));
    });

    test('when a message is queued and other values differ too, the message comes first', async () => {
      const serial = await okmWith();
      const message = await queueMessage(t.db, serial, 'delete-assets');

      assert.deepEqual(await answer(serial, {}), { message: { id: message.id, type: 'delete-assets', payload: null } });
    });
  });

  describe('3 KAS firmware', () => {
    test('when the fleet latest (2.10.0) is newer than the reported 2.9.9, it is offered', async () => {
      assert.deepEqual(await answer(await okmWith(), { ...IN_SYNC, kasFirmware: '2.9.9' }), { kasFirmware: firmwareOffer('kas', '2.10.0') });
    });

    test('when kasFirmware is missing or unparsable, the effective release is offered', async () => {
      const serial = await okmWith();
      for (const kasFirmware of [undefined, 'abc', '2.10.0-rc1']) {
        assert.deepEqual(await answer(serial, { ...IN_SYNC, kasFirmware }), { kasFirmware: firmwareOffer('kas', '2.10.0') });
      }
    });

    test('when the device runs the effective release or a newer one, no firmware correction', async () => {
      const serial = await okmWith();

      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasFirmware: '2.10.0' }), {});
      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasFirmware: '2.11' }), {});
    });

    test("when the OKM pins an older release, the pin overrides the fleet latest", async () => {
      const serial = await okmWith({ firmware: { kas: '2.9.9', batch_key: null, wireless_key: null } });

      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasFirmware: '2.9.9' }), {});
      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasFirmware: '2.0' }), { kasFirmware: firmwareOffer('kas', '2.9.9') });
    });

    test('when the OKM pins a version missing from the catalog, nothing is offered', async () => {
      const serial = await okmWith({ firmware: { kas: '9.9.9', batch_key: null, wireless_key: null } });

      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasFirmware: '1.0' }), {});
    });
  });

  describe('4 date-time', () => {
    test('when kasDateTime is exactly 5 minutes behind or ahead, no correction', async () => {
      const serial = await okmWith();

      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasDateTime: SERVER_TIME - 300_000 }), {});
      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasDateTime: SERVER_TIME + 300_000 }), {});
    });

    test('when kasDateTime is 300001 ms behind or ahead, server time is sent', async () => {
      const serial = await okmWith();

      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasDateTime: SERVER_TIME - 300_001 }), { kasDateTime: SERVER_TIME });
      assert.deepEqual(await answer(serial, { ...IN_SYNC, kasDateTime: SERVER_TIME + 300_001 }), { kasDateTime: SERVER_TIME });
    });

    test('when kasDateTime is missing or not a number, server time is sent', async () => {
      const serial = await okmWith();
      for (const kasDateTime of [undefined, 'abc', '1e12', '']) {
        assert.deepEqual(await answer(serial, { ...IN_SYNC, kasDateTime }), { kasDateTime: SERVER_TIME }, String(kasDateTime));
      }
    });
  });

  describe('5 cache mode', () => {
    test('when the configured mode differs from the reported one or that is 0, the configured mode is sent', async () => {
      const serial = await okmWith();
      for (const cacheMode of [1, 0, undefined, '[]']) {
        assert.deepEqual(await answer(serial, { ...IN_SYNC, cacheMode }), { cacheMode: 2 }, String(cacheMode));
      }
    });

    test('when no mode is configured and the device reports 0 or 2, disabled (1) is sent', async () => {
      const serial = await okmWith({ cacheMode: null });

      assert.deepEqual(await answer(serial, { ...IN_SYNC, cacheMode: 0 }), { cacheMode: 1 });
      assert.deepEqual(await answer(serial, { ...IN_SYNC, cacheMode: 2 }), { cacheMode: 1 });
      assert.deepEqual(await answer(serial, { ...IN_SYNC, cacheMode: 1 }), {});
    });
  });

  describe('6 key checkout window', () => {
    test('when the time or the contact differs, both stored values are sent', async () => {
      const serial = await okmWith();
      const stored = { keyCheckoutWindowTime: 30, keyCheckoutWindowContact: 'closed' };

      assert.deepEqual(await answer(serial, { ...IN_SYNC, keyCheckoutWindowTime: 31 }), stored);
      assert.deepEqual(await answer(serial, { ...IN_SYNC, keyCheckoutWindowContact: 'open' }), stored);
      assert.deepEqual(await answer(serial, { ...IN_SYNC, keyCheckoutWindowTime: undefined }), stored);
    });

    test('when no window is configured, no correction whatever the device reports', async () => {
      const serial = await okmWith({ keyCheckoutWindow: null });

      assert.deepEqual(await answer(serial, { ...IN_SYNC, keyCheckoutWindowTime: 5, keyCheckoutWindowContact: 'open' }), {});
    });
  });

  describe('7 retail config', () => {
    test('when auditing is enabled and retailCfg is not 2, retailCfg 2 is sent', async () => {
      assert.deepEqual(await answer(await okmWith(), { ...IN_SYNC, retailCfg: 1 }), { retailCfg: 2 });
    });

    test('when auditing is disabled, no correction whatever retailCfg is', async () => {
      assert.deepEqual(await answer(await okmWith({ auditingEnabled: false }), { ...IN_SYNC, retailCfg: 1 }), {});
    });
  });

  for (const { name, number, setting, items } of [
    { name: 'assetList', number: 8, setting: 'assetList', items: ASSETS },
    { name: 'usersAssets', number: 9, setting: 'usersAssets', items: USERS },
  ] as const) {
    describe(`${number} ${name}`, () => {
      test('when the reported digest differs, the list and its digest are sent', async () => {
        assert.deepEqual(await answer(await okmWith(), { ...IN_SYNC, [name]: 'ff'.repeat(32) }), {
          [name]: items,
          [`${name}Digest`]: DIGESTS[name].items,
        });
      });

      test('when the reported digest matches in uppercase, no correction', async () => {
        assert.deepEqual(await answer(await okmWith(), { ...IN_SYNC, [name]: DIGESTS[name].items.toUpperCase() }), {});
      });

      test('when an empty list is configured on a device with no digest, the empty list is sent', async () => {
        const serial = await okmWith({ [setting]: [] });

        assert.deepEqual(await answer(serial, { ...IN_SYNC, [name]: undefined }), { [name]: [], [`${name}Digest`]: DIGESTS.empty });
      });

      test('when the list changes, the next poll sends the new list', async () => {
        const serial = await okmWith();
        await updateOkmSettings(t.db, serial, { ...CONFIGURED, [setting]: [...items, 'more'] }, SERVER_TIME);

        assert.deepEqual(await answer(serial, IN_SYNC), { [name]: [...items, 'more'], [`${name}Digest`]: DIGESTS[name].more });
      });

      test('when no list is configured, no correction whatever the device reports', async () => {
        assert.deepEqual(await answer(await okmWith({ [setting]: null }), { ...IN_SYNC, [name]: 'whatever' }), {});
      });
    });
  }

  describe('10 audit URL', () => {
    test('when auditUrl is missing or different, the service audit URL is sent', async () => {
      const serial = await okmWith();
      for (const auditUrl of [undefined, '/api/v2/audit', 'https://fleet.example/api/v1/audit']) {
        assert.deepEqual(await answer(serial, { ...IN_SYNC, auditUrl }), { auditUrl: '/api/v1/audit' }, String(auditUrl));
      }
    });
  });

  describe('11 polling interval', () => {
    test('when the reported interval is 4 or 3601, the effective interval is sent', async () => {
      const serial = await okmWith({ pollingInterval: 5 });
      const longest = await okmWith({ pollingInterval: 3600 });

      assert.deepEqual(await answer(serial, { ...IN_SYNC, pollingInterval: 4 }), { pollingInterval: 5 });
      assert.deepEqual(await answer(longest, { ...IN_SYNC, pollingInterval: 3601 }), { pollingInterval: 3600 });
    });

    test('when the reported interval is 5 or 3600 and that is the effective one, no correction', async () => {
      assert.deepEqual(await answer(await okmWith({ pollingInterval: 5 }), { ...IN_SYNC, pollingInterval: 5 }), {});
      assert.deepEqual(await answer(await okmWith({ pollingInterval: 3600 }), { ...IN_SYNC, pollingInterval: 3600 }), {});
    });

    test('when the OKM has no interval of its own, the fleet default (150) is sent', async () => {
      const serial = await okmWith({ pollingInterval: null });

      assert.deepEqual(await answer(serial, { ...IN_SYNC, pollingInterval: 60 }), { pollingInterval: 150 });
      assert.deepEqual(await answer(serial, { ...IN_SYNC, pollingInterval: 150 }), {});
    });

    test('when pollingInterval is missing or not an integer, the effective interval is sent', async () => {
      const serial = await okmWith();
      for (const pollingInterval of [undefined, '1e99', '60.0', 'sixty']) {
        assert.deepEqual(await answer(serial, { ...IN_SYNC, pollingInterval }), { pollingInterval: 60 }, String(pollingInterval));
      }
    });
  });

  describe('12 batch key firmware', () => {
    test('when the fleet latest is newer, or the reported version is missing or unparsable, it is offered', async () => {
      const serial = await okmWith();
      for (const batchKeyFirmware of ['1.1.9', undefined, 'v1.2']) {
        assert.deepEqual(await answer(serial, { ...IN_SYNC, batchKeyFirmware }), { batchKeyFirmware: firmwareOffer('batch_key', '1.2') });
      }
    });

    test('when the device runs it, no correction', async () => {
      assert.deepEqual(await answer(await okmWith(), { ...IN_SYNC, batchKeyFirmware: '1.2.0' }), {});
    });
  });

  describe('13 wireless key firmware', () => {
    test('when an uploaded release is newer, it is offered at the service file URL', async () => {
      assert.deepEqual(await answer(await okmWith(), { ...IN_SYNC, wirelessKeyFirmware: '2.99' }), {
        wirelessKeyFirmware: { version: '3.0', url: 'https://fleet.example/api/v1/firmware/wireless_key/3.0/file', sha256: SHA256 },
      });
    });

    test('when the device runs it, no correction', async () => {
      assert.deepEqual(await answer(await okmWith(), { ...IN_SYNC, wirelessKeyFirmware: '3.0' }), {});
    });
  });

  describe('order', () => {
    test('when two values differ, the earlier resolver answers and the next poll gets the later one', async () => {
      const serial = await okmWith();

      const first = await answer(serial, { ...IN_SYNC, kasDateTime: undefined, pollingInterval: 4 });
      const second = await answer(serial, { ...IN_SYNC, pollingInterval: 4 });

      assert.deepEqual(first, { kasDateTime: SERVER_TIME });
      assert.deepEqual(second, { pollingInterval: 60 });
    });
  });
});

forEachDatabase('config resolvers with a custom AUDIT_URL', (kind) => {
  let t: TestApp;
  before(async () => (t = await buildTestApp(kind, { AUDIT_URL: '/kas/audit' })));
  after(() => t.close());

  test('when auditUrl is the default one, the configured AUDIT_URL is sent', async () => {
    const serial = newSerial();
    await insertOkm(t.db, serial, null, UNCONFIGURED_OKM, Date.now());

    const response = await poll(t, serial, { kasDateTime: Date.now(), cacheMode: 1, auditUrl: '/api/v1/audit', pollingInterval: 150 });

    assert.deepEqual(response.json(), { auditUrl: '/kas/audit' });
  });
});
