import type { FastifyInstance } from 'fastify';
import { createOutageLog, isDatabaseUnavailable } from './connection-errors.ts';

/**
 * Runs a bounded background step of this server process again and again: at once when the
 * process is ready, then after the delay each step returns (short while work remains, the
 * interval otherwise), after `intervalMs` when it failed. A failure is logged (an outage once
 * per window); closing the app waits for the step in progress.
 */
export function repeatStep(app: FastifyInstance, what: string, intervalMs: number, step: () => Promise<number>): void {
  const outageLog = createOutageLog(app.log);
  let timer: NodeJS.Timeout | undefined;
  let stepping: Promise<void> = Promise.resolve();
  let closing = false;
  const run = () => {
    stepping = step()
      .catch((error: unknown) => {
        if (isDatabaseUnavailable(error)) outageLog(`${what} failed`, error);
        else app.log.error({ err: error }, `${what} failed`);
        return intervalMs;
      })
      .then((delayMs) => {
        if (!closing) timer = setTimeout(run, delayMs).unref();
      });
  };
  app.addHook('onReady', async () => void (timer = setTimeout(run, 0).unref()));
  app.addHook('onClose', async () => {
    closing = true;
    clearTimeout(timer);
    await stepping;
  });
}
