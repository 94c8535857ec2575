import { insertOkm } from '../../src/okm/repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import type { RolloutEvent } from '../../src/rollouts/events.ts';
import type { TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { poll, type DeviceParameters } from '../device/config-helpers.ts';
import { parametersAfter } from '../../src/simulator/device.ts';

/**
 * A simulated OKM over HTTP (the test device model): it reports what it has, applies each
 * correction as a device does, and installs offered KAS firmware unless it refuses updates.
 */
export class SimulatedOkm {
  readonly parameters: DeviceParameters;
  /** Every KAS firmware version it was offered. */
  readonly offers: string[] = [];
  /** Reply keys whose corrections it does not carry out (a device that never takes them gets stuck on them). */
  readonly ignores = new Set<string>();

  constructor(
    readonly serialNumber: string,
    t: TestApp,
    kasFirmware: string,
    public refusesUpdates = false,
  ) {
    this.parameters = { kasFirmware, cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: t.settings.fleetPollingInterval };
  }

  async poll(t: TestApp): Promise<Record<string, unknown>> {
    this.parameters.kasDateTime = Date.now();
    const response = await poll(t, this.serialNumber, this.parameters);
    if (response.statusCode !== 200) throw new Error(`poll of ${this.serialNumber}: ${response.statusCode} ${response.body}`);
    const correction = response.json() as Record<string, unknown>;
    const offered = correction.kasFirmware as { version: string } | undefined;
    if (offered) this.offers.push(offered.version);
    const changes = parametersAfter(correction);
    if (offered && this.refusesUpdates) delete changes.kasFirmware;
    for (const key of this.ignores) delete changes[key];
    Object.assign(this.parameters, changes);
    return correction;
  }
}

/** Inserts `count` OKMs of the customer (nothing configured) and their simulated devices at `kasFirmware`. */
export async function createFleet(t: TestApp, customerId: number, count: number, kasFirmware: string, prefix: string): Promise<SimulatedOkm[]> {
  const fleet: SimulatedOkm[] = [];
  for (let index = 0; index < count; index++) {
    const serial = `${prefix}-${String(index).padStart(5, '0')}`;
    await insertOkm(t.db, serial, customerId, UNCONFIGURED_OKM, Date.now());
    fleet.push(new SimulatedOkm(serial, t, kasFirmware));
  }
  return fleet;
}

/** Every device polls once, a few at a time (as a fleet's polls arrive interleaved). */
export async function pollAll(t: TestApp, fleet: readonly SimulatedOkm[], concurrency = 16): Promise<void> {
  for (let start = 0; start < fleet.length; start += concurrency) {
    await Promise.all(fleet.slice(start, start + concurrency).map((okm) => okm.poll(t)));
  }
}

/** An emitter that records the events it is given. */
export function recordingEmitter(): { events: RolloutEvent[]; emit: (db: unknown, event: RolloutEvent) => Promise<void> } {
  const events: RolloutEvent[] = [];
  return { events, emit: async (_db, event) => void events.push(event) };
}

export async function customerWriter(t: TestApp, customer: string, subject?: string): Promise<string> {
  return issueTestToken(t, { customer, scopes: ['okm:read', 'okm:write'], ttlSeconds: 7 * 86_400, ...(subject === undefined ? {} : { subject }) });
}

export function api(t: TestApp, token: string) {
  const call = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload: payload as object }) });
  return {
    create: (body: unknown) => call('POST', '/api/v1/rollouts', body),
    get: (id: number) => call('GET', `/api/v1/rollouts/${id}`),
    list: (query = '') => call('GET', `/api/v1/rollouts${query}`),
    act: (id: number, action: string) => call('POST', `/api/v1/rollouts/${id}/${action}`),
  };
}
