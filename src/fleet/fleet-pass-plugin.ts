import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { repeatStep } from '../db/repeating-step.ts';
import { createFleetPass, releaseLease, type FleetPassRunner } from './fleet-pass.ts';
import { lastFleetPassAt } from './fleet-summary-repository.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The fleet pass of this process (src/fleet/fleet-pass.ts); tests and operators' tools may run one at once. */
    fleetPass: FleetPassRunner;
  }
}

/** The pause between two steps of a pass: the polls' writes go between them. */
const PAUSE_BETWEEN_STEPS_MS = 5;

/**
 * Runs the fleet pass in this server process: when it is ready, unless a pass completed less
 * than fleetPassIntervalMs ago, then every fleetPassIntervalMs after the last pass ended; a
 * process whose lease another holds skips its turn. On close it ends the pass in progress
 * after its current step and gives the lease up.
 */
async function fleetPassPlugin(app: FastifyInstance): Promise<void> {
  const fleetPass = createFleetPass(app.db, app.settings);
  app.decorate('fleetPass', fleetPass);
  const intervalMs = app.settings.fleetPassIntervalMs;
  if (intervalMs === 0) return;
  // onClose hooks run in reverse order: this one, added before repeatStep's, runs after the
  // pass in progress has ended, so no step takes the lease again once it is given up.
  app.addHook('onClose', async () => {
    await releaseLease(app.db, fleetPass.holder).catch(() => {});
  });
  app.addHook('preClose', async () => fleetPass.stop());
  repeatStep(app, 'fleet pass', intervalMs, async () => {
    // A pass that any process completed less than an interval ago is not due yet (a restart, another process's turn).
    const completedAt = await lastFleetPassAt(app.db);
    const dueIn = completedAt === null ? 0 : completedAt + intervalMs - Date.now();
    if (dueIn > 0) return dueIn;
    await fleetPass.runPass({ pauseMs: PAUSE_BETWEEN_STEPS_MS });
    return intervalMs;
  });
}

export default fp(fleetPassPlugin, { name: 'keyfleet-fleet-pass' });
