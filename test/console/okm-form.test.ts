import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { changedFields, formFromRecord, patchFromForm, type OkmConfiguration } from '../../console/src/okm-form.ts';
import { filtersFromQuery, queryFromFilters } from '../../console/src/okm-filters.ts';
import { resolverValues } from '../../console/src/resolver-values.ts';

const OKM: OkmConfiguration = {
  polling_interval: null,
  cache_mode: 2,
  key_checkout_window: { time: 30, contact: 'open' },
  auditing_enabled: true,
  asset_list: null,
  firmware: { kas: '2.4.1', batch_key: null, wireless_key: null },
  subscribe_urls: { status: ['https://hooks.example/a'] },
};

test('an untouched form patches nothing', () => {
  assert.deepEqual(patchFromForm(OKM, formFromRecord(OKM)), {});
});

test('the patch carries only what changed; emptied fields unset with null', () => {
  const form = { ...formFromRecord(OKM), polling_interval: '300', cache_mode: '' as const, firmware_kas: '', status_urls: 'https://hooks.example/a\n https://hooks.example/b \n' };

  assert.deepEqual(patchFromForm(OKM, form), {
    polling_interval: 300,
    cache_mode: null,
    firmware: { kas: null },
    subscribe_urls: { status: ['https://hooks.example/a', 'https://hooks.example/b'] },
  });
});

test('a value that is not a whole number goes to the API as typed, for its message', () => {
  assert.deepEqual(patchFromForm(OKM, { ...formFromRecord(OKM), polling_interval: '2.5' }), { polling_interval: '2.5' });
  assert.deepEqual(patchFromForm(OKM, { ...formFromRecord(OKM), key_checkout_window_time: '', key_checkout_window_contact: '' }), { key_checkout_window: null });
});

test('an asset list typed into an OKM that had none is set; left empty it stays unset', () => {
  assert.deepEqual(patchFromForm(OKM, { ...formFromRecord(OKM), asset_list: 'LOCK-1\nLOCK-2' }), { asset_list: ['LOCK-1', 'LOCK-2'] });
  assert.deepEqual(patchFromForm(OKM, { ...formFromRecord(OKM), asset_list: '  ' }), {});
});

test('the form of any record patches nothing', () => {
  const version = fc.option(fc.constantFrom('1.0.0', '2.4.1'), { nil: null });
  const record = fc.record({
    polling_interval: fc.option(fc.integer({ min: 5, max: 3600 }), { nil: null }),
    cache_mode: fc.constantFrom(1 as const, 2 as const, null),
    key_checkout_window: fc.option(fc.record({ time: fc.integer({ min: 0, max: 86400 }), contact: fc.constantFrom('open' as const, 'closed' as const) }), { nil: null }),
    auditing_enabled: fc.boolean(),
    asset_list: fc.option(fc.uniqueArray(fc.stringMatching(/^[A-Z0-9-]{1,12}$/), { maxLength: 5 }), { nil: null }),
    firmware: fc.record({ kas: version, batch_key: version, wireless_key: version }),
    subscribe_urls: fc.record({ status: fc.uniqueArray(fc.webUrl(), { maxLength: 3 }) }),
  });
  fc.assert(fc.property(record, (okm) => assert.deepEqual(patchFromForm(okm, formFromRecord(okm)), {})));
});

test('the OKM list filters survive the URL both ways; what is not understood is dropped', () => {
  const filters = {
    state: 'drifting' as const,
    firmware_version: '2.4.1',
    customer: 'acme',
    overdue: false,
    serial_prefix: 'OKM-1',
    unassigned: true as const,
    last_correction: 'kasDateTime' as const,
    subscriber_url: 'https://hooks.example/status?x=1&y=2',
  };

  assert.deepEqual(filtersFromQuery(Object.fromEntries(new URLSearchParams(queryFromFilters(filters)))), filters);
  assert.deepEqual(filtersFromQuery({ state: 'asleep', overdue: 'maybe', serial_prefix: '  ', unassigned: 'yes', last_correction: 'kasdatetime', subscriber_url: ' ' }), {});
  // The list has neither a sort nor numbered pages any more: an old bookmark's are dropped, its filters kept.
  assert.deepEqual(filtersFromQuery({ state: 'drifting', sort: '-last_sync_time', page: '3' }), { state: 'drifting' });
  for (const state of ['in_step', 'drifting', 'overdue', 'never_polled', 'stuck'] as const) assert.deepEqual(filtersFromQuery({ state }), { state }, state);
  assert.equal(queryFromFilters({}), '');
});

test('each resolver’s row shows what is configured beside what the device reported', () => {
  const okm = { ...OKM, users_assets: null, effective_polling_interval: 150, reported: { pollingInterval: '999', kasDateTime: '1795390495000', cacheMode: '1' } };

  assert.deepEqual(resolverValues('pollingInterval', okm, 0), { label: 'Polling interval', configured: '150 s (fleet default)', reported: '999 s' });
  assert.deepEqual(resolverValues('cacheMode', okm, 0), { label: 'Cache mode', configured: '2', reported: '1' });
  assert.equal(resolverValues('kasDateTime', okm, 0).reportedTime, '2026-11-22T23:34:55.000Z');
  assert.equal(resolverValues('message', okm, 2).configured, '2 waiting');
  assert.equal(resolverValues('kasFirmware', { ...okm, reported: null }, 0).reported, '—');
});

test('the fields changed between two records are named as the form names them, in its order; none for equal records', () => {
  assert.deepEqual(changedFields(OKM, { ...OKM }), []);
  assert.deepEqual(
    changedFields(OKM, { ...OKM, polling_interval: 60, key_checkout_window: { time: 30, contact: 'closed' }, subscribe_urls: { status: [] } }),
    ['polling interval', 'window contact', 'subscriber URLs'],
  );
});

test('a patch made against the record editing started from carries only the edits, whatever the server changed since', () => {
  const form = { ...formFromRecord(OKM), polling_interval: '300' };
  const changedOnServer = { ...OKM, key_checkout_window: { time: 60, contact: 'closed' as const } };

  assert.deepEqual(patchFromForm(OKM, form), { polling_interval: 300 });
  assert.deepEqual(changedFields(OKM, changedOnServer), ['key checkout window', 'window contact']);
});
