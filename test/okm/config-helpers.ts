import { after, before, mock } from 'node:test';
import type { Db } from '../../src/db/database.ts';
import type { FirmwareKind } from '../../src/firmware/version.ts';
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
