import { Counter, Gauge, type Registry } from 'prom-client';

export interface StatusEventMetrics {
  queued: Counter;
  delivered: Counter;
  /** Deliveries given up: after the last attempt, or stopped by a 410. */
  failed: Counter<'reason'>;
  /** Attempts that did not succeed and will be retried. */
  retried: Counter;
}

/** The status-event metrics on the app's registry; the queue depth is counted in the database when scraped. */
export function registerStatusEventMetrics(registry: Registry, countPending: () => Promise<number>): StatusEventMetrics {
  const registers = [registry];
  new Gauge({
    name: 'keyfleet_status_events_queue_depth',
    help: 'Status events waiting to be delivered (one at most per OKM and URL), over all processes',
    registers,
    // A scrape during a database outage still reports the process's own metrics; the depth,
    // which only the database knows, is NaN (unknown) until it answers again, never a false 0.
    async collect() {
      try {
        this.set(await countPending());
      } catch {
        this.set(Number.NaN);
      }
    },
  });
  return {
    queued: new Counter({ name: 'keyfleet_status_events_queued_total', help: 'Status events queued by config polls of this process', registers }),
    delivered: new Counter({ name: 'keyfleet_status_events_delivered_total', help: 'Status events delivered (2xx) by this process', registers }),
    failed: new Counter({
      name: 'keyfleet_status_events_failed_total',
      help: 'Status events given up by this process: after the last attempt (reason "attempts") or on a 410 (reason "gone")',
      labelNames: ['reason'] as const,
      registers,
    }),
    retried: new Counter({ name: 'keyfleet_status_event_attempts_failed_total', help: 'Delivery attempts that failed and will be retried', registers }),
  };
}
