import { after, before, mock } from 'node:test';
import { MAX_PAGE_LIMIT } from '../../src/db/cursor-pages.ts';
import type { Db } from '../../src/db/database.ts';
import type { FirmwareKind } from '../../src/firmware/version.ts';
import { listAuditRecords } from '../../src/okm/audit-repository.ts';
import { listMessages } from '../../src/okm/messages-repository.ts';
import { SERVER_TIME } from './resolvers/fixtures.ts';
import type { TestApp } from '../helpers/app.ts';

export { SERVER_TIME };

/** Freezes Date (only Date: timers and I/O run as usual) at SERVER_TIME for the enclosing suite. */
export function freezeServerClock(): void {
  before(() => mock.timers.enable({ apis: ['Date'], now: SERVER_TIME }));
  after(() => mock.timers.reset());
}

let serials = 0;
/** A serial number no other test of the run uses. */
export const newSerial = (prefix = 'OKM') => `${prefix}-${process.pid}-${++serials}`;

/** The OKM's messages, oldest first: the first page at the largest page size, which every test's few messages fit in. */
export const allMessages = async (db: Db, serial: string) => (await listMessages(db, serial, { after: undefined, limit: MAX_PAGE_LIMIT })).items;

/** The OKM's audit records as they arrived: the first page at the largest page size. */
export const auditRecordsOf = async (db: Db, serial: string) => (await listAuditRecords(db, serial, { after: undefined, limit: MAX_PAGE_LIMIT })).items.map((entry) => entry.record);

/** How many audit records the OKM has. */
export async function auditRecordCount(db: Db, serial: string): Promise<number> {
  const row = await db.selectFrom('okm_audit_records').select((eb) => eb.fn.countAll<number | string>().as('n')).where('okm_serial', '=', serial).executeTakeFirstOrThrow();
  return Number(row.n);
}

export type DeviceParameters = Record<string, string | number | undefined>;

export function configQuery(parameters: DeviceParameters): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters)) if (value !== undefined) query.append(name, String(value));
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

/** One config call as a device makes it. */
export function poll(t: TestApp, serialNumber: string, parameters: DeviceParameters = {}, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url: `${t.settings.configPath}/${serialNumber}${configQuery(parameters)}`, headers });
}

export const SHA256 = 'cd'.repeat(32);

/** Adds a catalog release (an external URL, or an uploaded file when url is null), optionally as the fleet's latest. */
export async function addRelease(db: Db, kind: FirmwareKind, version: string, options: { url?: string | null; fleetLatest?: boolean } = {}) {
  const url = options.url === undefined ? `https://firmware.example/${kind}/${version}.bin` : options.url;
  await db.insertInto('firmware_releases').values({ kind, version, url, sha256: SHA256, size: null, created_at: SERVER_TIME }).execute();
  if (options.fleetLatest) {
    await db
      .insertInto('fleet_firmware')
      .values({ kind, version })
      .onConflict((oc) => oc.column('kind').doUpdateSet({ version }))
      .execute();
  }
}
