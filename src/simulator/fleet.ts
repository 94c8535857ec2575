import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { SimulationStats, type Snapshot, type Summary } from './stats.ts';
import { VirtualOkm, type DeviceContext, type DeviceProfile } from './virtual-okm.ts';

export interface SimulationOptions {
  /** The server's origin, e.g. http://127.0.0.1:8080. */
  url: string;
  okms: number;
  prefix: string;
  /** What each device polls at until the server says otherwise (seconds). */
  intervalSeconds: number;
  /** Time compression: a device's interval of S seconds lasts S / speed real seconds. */
  speed: number;
  /** Real time the run lasts; undefined: until stopped (or in step with untilInStep). */
  durationMs: number | undefined;
  refuseFirmwarePercent: number;
  /** Devices whose clock starts 10 minutes slow. */
  slowClockPercent: number;
  offlinePercent: number;
  interruptDownloadsPercent: number;
  /** Installer code of device i is base + i, as many digits as base; undefined: random 8-digit codes. */
  installCodeBase: string | undefined;
  /** Requests in flight at most (and keep-alive connections). */
  concurrency: number;
  /** A device posts an audit record every this many polls while auditing is on; 0 never. */
  auditEvery: number;
  /** End the run once every device is in step or refusing an offered firmware (whatever its other settings). */
  untilInStep: boolean;
}

export interface Simulation {
  /** The figures so far; polls/s since the previous call. */
  snapshot(): Snapshot;
  /** Ends the run: no new polls, the ones in flight finish. */
  stop(): void;
  /** Resolves once the run has ended, with its summary. */
  finished: Promise<Summary>;
}

/** A device that goes offline stays silent for this many of its intervals: past the server's overdue mark (3). */
export const OFFLINE_INTERVALS = 4;
const IN_FLIGHT_GRACE_MS = 5_000;

/** A well-spread 32-bit hash of an index, so that chosen devices are scattered over the fleet, not the first ones. */
function spread(index: number, salt: number): number {
  let x = Math.imul(index ^ salt, 0x9e3779b1);
  x ^= x >>> 15;
  x = Math.imul(x, 0x85ebca77);
  x ^= x >>> 13;
  return x >>> 0;
}

/** Exactly round(count × percent / 100) indices of 0…count-1, the same ones on every run. */
function chosen(count: number, percent: number, salt: number): Set<number> {
  const wanted = Math.round((count * percent) / 100);
  if (wanted === 0) return new Set();
  const indices = Array.from({ length: count }, (_, index) => index);
  indices.sort((a, b) => spread(a, salt) - spread(b, salt));
  return new Set(indices.slice(0, wanted));
}

export function serialNumber(prefix: string, index: number, okms: number): string {
  return `${prefix}${String(index + 1).padStart(Math.max(6, String(okms).length), '0')}`;
}

export function installCode(base: string | undefined, index: number): string {
  if (base === undefined) return String(randomInt(10_000_000, 100_000_000));
  return (BigInt(base) + BigInt(index)).toString().padStart(base.length, '0');
}

function profiles(options: SimulationOptions): DeviceProfile[] {
  const refusing = chosen(options.okms, options.refuseFirmwarePercent, 0x5eed1);
  const offline = chosen(options.okms, options.offlinePercent, 0x5eed2);
  const interrupting = chosen(options.okms, options.interruptDownloadsPercent, 0x5eed3);
  const slowClocks = chosen(options.okms, options.slowClockPercent, 0x5eed5);
  return Array.from({ length: options.okms }, (_, index) => ({
    index,
    serial: serialNumber(options.prefix, index, options.okms),
    installCode: installCode(options.installCodeBase, index),
    refusesFirmware: refusing.has(index),
    slowClock: slowClocks.has(index),
    interruptsDownloads: interrupting.has(index),
    // After 3–10 polls: most devices are in step by then, so the silence is seen from in step.
    offlineAfterPolls: offline.has(index) ? 3 + (spread(index, 0x5eed4) % 8) : undefined,
  }));
}

interface Due {
  at: number;
  device: VirtualOkm;
}

/** A binary min-heap of devices by the time their next poll is due. */
class PollQueue {
  private readonly heap: Due[] = [];

  get size(): number {
    return this.heap.length;
  }

  peek(): Due | undefined {
    return this.heap[0];
  }

  push(entry: Due): void {
    const heap = this.heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]!.at <= entry.at) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = entry;
  }

  pop(): Due | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]!.at < heap[left]!.at ? right : left;
      if (heap[child]!.at >= last.at) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = last;
    return top;
  }
}

/**
 * Starts a fleet of virtual OKMs against a server. Devices' first polls are spread evenly
 * over one interval; each next poll is due one interval (as the device counts it, divided
 * by the speed) after the previous one started. At most `concurrency` rounds run at once,
 * over as many keep-alive connections; a round that starts late is counted as lag.
 */
export function startSimulation(options: SimulationOptions): Simulation {
  const origin = new URL(options.url).origin;
  const startedAt = performance.now();
  const devices = profiles(options).map((profile) => new VirtualOkm(profile, options.intervalSeconds));
  const stats = new SimulationStats(options.okms, options.speed, startedAt, devices.filter((device) => device.profile.refusesFirmware).length);
  const http = new Pool(origin, { connections: options.concurrency, keepAliveTimeout: 30_000, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const context: DeviceContext = { http, origin, stats, auditEvery: options.auditEvery };
  const realMs = (seconds: number) => (seconds * 1000) / options.speed;
  const queue = new PollQueue();
  const firstRound = realMs(options.intervalSeconds);
  devices.forEach((device, index) => queue.push({ at: startedAt + (firstRound * index) / options.okms, device }));

  let inFlight = 0;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let finish: (summary: Summary) => void;
  const finished = new Promise<Summary>((resolve) => (finish = resolve));
  const durationTimer = options.durationMs === undefined ? undefined : setTimeout(() => stop(), options.durationMs);

  const allInStep = () => stats.count('in_step') + stats.count('refusing_firmware') === options.okms;

  function launch(entry: Due, now: number): void {
    const { device } = entry;
    stats.lag(now - entry.at);
    inFlight++;
    void device.round(context, () => performance.now()).then(() => {
      inFlight--;
      const interval = realMs(device.intervalSeconds());
      if (device.goesOfflineNow()) {
        device.offline = true;
        stats.offline++;
        queue.push({ at: now + interval * OFFLINE_INTERVALS, device });
      } else {
        queue.push({ at: now + interval, device });
      }
      if (options.untilInStep && allInStep()) stop();
      pump();
    });
  }

  function pump(): void {
    if (stopping) {
      if (inFlight === 0) void end();
      return;
    }
    const now = performance.now();
    while (inFlight < options.concurrency) {
      const next = queue.peek();
      if (next === undefined || next.at > now) break;
      queue.pop();
      if (next.device.offline) {
        next.device.offline = false;
        stats.offline--;
      }
      launch(next, now);
    }
    clearTimeout(timer);
    const next = queue.peek();
    if (inFlight < options.concurrency && next !== undefined) timer = setTimeout(pump, Math.max(0, next.at - now));
  }

  let ended = false;
  async function end(): Promise<void> {
    if (ended) return;
    ended = true;
    clearTimeout(durationTimer);
    clearTimeout(timer);
    await http.destroy();
    const stillConverging = devices.filter((device) => device.changeStartedAt !== undefined).length;
    finish(stats.summary(performance.now(), stillConverging));
  }

  function stop(): void {
    if (stopping) return;
    stopping = true;
    clearTimeout(timer);
    if (inFlight === 0) void end();
    // Rounds still waiting on a dead server give up after the grace period.
    else setTimeout(() => void end(), IN_FLIGHT_GRACE_MS).unref();
  }

  pump();
  return { snapshot: () => stats.snapshot(performance.now()), stop, finished };
}
