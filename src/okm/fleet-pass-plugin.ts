import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { repeatStep } from '../db/repeating-step.ts';
import { createFleetPass, releaseLease, type FleetPassRunner } from './fleet-pass.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The fleet pass of this process (src/okm/fleet-pass.ts); tests and operators' tools may run one at once. */
    fleetPass: FleetPassRunner;
  }
}

/** The pause between two steps of a pass: the polls' writes go between them. */
const PAUSE_BETWEEN_STEPS_MS = 5;

/**
 * Runs the fleet pass in this server process: at once when it is ready, then every
 * fleetPassIntervalMs after the previous pass ended; a process whose lease another holds
 * skips its turn. On close it gives the lease up.
 */
async function fleetPassPlugin(app: FastifyInstance): Promise<void> {
  const fleetPass = createFleetPass(app.db, app.settings);
  app.decorate('fleetPass', fleetPass);
  const intervalMs = app.settings.fleetPassIntervalMs;
  if (intervalMs === 0) return;
  repeatStep(app, 'fleet pass', intervalMs, async () => {
    await fleetPass.runPass({ pauseMs: PAUSE_BETWEEN_STEPS_MS });
    return intervalMs;
  });
  app.addHook('onClose', async () => {
    await releaseLease(app.db, fleetPass.holder).catch(() => {});
  });
}

export default fp(fleetPassPlugin, { name: 'keyfleet-fleet-pass' });
