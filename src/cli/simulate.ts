import type { Command } from 'commander';
import { startSimulation, serialNumber, type SimulationOptions } from '../simulator/fleet.ts';
import { countsText, progressLine, type Summary } from '../simulator/stats.ts';
import { durationOption, onStopSignal, UsageError } from './context.ts';

const SERIAL = /^[A-Za-z0-9._-]{1,64}$/;
const PROGRESS_EVERY_MS = { tty: 1000, log: 5000 };

interface RawOptions {
  url: string;
  okms: string;
  prefix: string;
  interval: string;
  speed: string;
  duration?: string;
  refuseFirmware: string;
  slowClock: string;
  offline: string;
  interruptDownloads: string;
  installCodeBase?: string;
  concurrency: string;
  auditEvery: string;
  untilInStep?: boolean;
  json?: boolean;
}

function integerOption(option: string, text: string, min: number, max: number): number {
  const value = /^\d{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) throw new UsageError(`${option}: expected a whole number from ${min} to ${max}, got "${text}"`);
  return value;
}

function percentOption(option: string, text: string): number {
  const value = /^\d{1,3}(\.\d+)?%?$/.test(text) ? Number(text.replace(/%$/, '')) : NaN;
  if (!(value >= 0 && value <= 100)) throw new UsageError(`${option}: expected a percentage from 0% to 100%, got "${text}"`);
  return value;
}

function serverUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--url: expected the server's base URL such as http://127.0.0.1:8080, got "${text}"`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    throw new UsageError(`--url: expected an http(s) origin without a path, such as http://127.0.0.1:8080, got "${text}"`);
  }
  return url.origin;
}

/** The command line read into simulation options; every refusal is a UsageError (exit 2). */
export function simulationOptions(raw: RawOptions): SimulationOptions {
  const okms = integerOption('--okms', raw.okms, 1, 10_000_000);
  if (!SERIAL.test(serialNumber(raw.prefix, okms - 1, okms))) {
    throw new UsageError(`--prefix: serial numbers are 1–64 characters of A–Z, a–z, 0–9, ".", "_" and "-"; "${serialNumber(raw.prefix, okms - 1, okms)}" is not`);
  }
  const speed = Number(raw.speed);
  if (!/^\d+(\.\d+)?$/.test(raw.speed) || !(speed > 0 && speed <= 100_000)) throw new UsageError(`--speed: expected a factor above 0, such as 1, 10 or 0.5, got "${raw.speed}"`);
  const base = raw.installCodeBase;
  if (base !== undefined && (!/^\d{5,20}$/.test(base) || (BigInt(base) + BigInt(okms - 1)).toString().length > 20)) {
    throw new UsageError(`--install-code-base: expected 5–20 digits that leave room for ${okms} codes within 20 digits, got "${base}"`);
  }
  return {
    url: serverUrl(raw.url),
    okms,
    prefix: raw.prefix,
    intervalSeconds: integerOption('--interval', raw.interval, 5, 3600),
    speed,
    durationMs: raw.duration === undefined ? undefined : durationOption('--duration', raw.duration),
    refuseFirmwarePercent: percentOption('--refuse-firmware', raw.refuseFirmware),
    slowClockPercent: percentOption('--slow-clock', raw.slowClock),
    offlinePercent: percentOption('--offline', raw.offline),
    interruptDownloadsPercent: percentOption('--interrupt-downloads', raw.interruptDownloads),
    installCodeBase: base,
    concurrency: integerOption('--concurrency', raw.concurrency, 1, 10_000),
    auditEvery: integerOption('--audit-every', raw.auditEvery, 0, 1_000_000),
    untilInStep: raw.untilInStep === true,
  };
}

function summaryText(summary: Summary): string {
  const times = ({ count, p50_ms, p99_ms, p50_simulated_s, p99_simulated_s }: Summary['convergence']['initial']) =>
    count === 0 ? 'none' : `${count} devices, p50 ${p50_ms} ms, p99 ${p99_ms} ms (device time p50 ${p50_simulated_s} s, p99 ${p99_simulated_s} s)`;
  const { firmware, convergence, refusers } = summary;
  const refuserTimes = ({ count, p50_polls, p99_polls, max_polls, p50_simulated_s, p99_simulated_s }: Summary['refusers']['otherwise_in_step']) =>
    count === 0 ? 'none' : `${count} devices, p50 ${p50_polls} polls, p99 ${p99_polls}, max ${max_polls} (device time p50 ${p50_simulated_s} s, p99 ${p99_simulated_s} s)`;
  return [
    `${summary.okms} virtual OKMs, ${summary.elapsed_s} s, ${summary.polls} polls (${summary.polls_per_second}/s)`,
    `in step: ${summary.in_step} (${summary.in_step_percent}%), refusing firmware: ${summary.refusing_firmware}, offline: ${summary.offline}`,
    `answers: enrolled ${summary.answers.enrolled}, in step ${summary.answers.in_step}, corrections ${summary.answers.corrections}`,
    `corrections: ${countsText(summary.corrections)}`,
    `errors: ${countsText(summary.errors)}`,
    `convergence from first poll: ${times(convergence.initial)}`,
    `convergence after a change: ${times(convergence.after_change)}; still converging: ${convergence.still_converging}`,
    `firmware: installed ${firmware.installed}, downloads ${firmware.downloads} (resumed ${firmware.resumed}, interrupted ${firmware.interrupted}, ${firmware.bytes} bytes), ` +
      `not fetched (other host) ${firmware.external}, refused ${firmware.refused}, checksum failures ${firmware.checksum_failures}`,
    `refusers: ${refusers.devices} devices, ${summary.refusing_firmware} refusing an offer now, ${summary.refusing_firmware_otherwise_in_step} of them otherwise in step; ` +
      `other corrections applied ${refusers.corrections_applied}; every setting but firmware in step after: ${refuserTimes(refusers.otherwise_in_step)}`,
    `audit: ${summary.audit.posts} posts; poll lag p50 ${summary.poll_lag_ms.p50 ?? '-'} ms, p99 ${summary.poll_lag_ms.p99 ?? '-'} ms`,
  ].join('\n');
}

export function register(program: Command): void {
  program
    .command('simulate')
    .description('run a fleet of virtual OKMs against a server: load tests and rollout rehearsals (docs/simulator.md)')
    .requiredOption('--url <url>', 'the server, e.g. http://127.0.0.1:8080')
    .requiredOption('--okms <n>', 'how many virtual OKMs')
    .option('--prefix <text>', 'serial number prefix (serials are PREFIX000001…)', 'SIM-')
    .option('--interval <seconds>', 'polling interval a device starts with, until the server corrects it', '150')
    .option('--speed <factor>', 'time compression: an interval of S seconds lasts S / factor', '1')
    .option('--duration <duration>', 'stop after this long (real time: 30s, 10m, 1h); default: until Ctrl-C')
    .option('--until-in-step', 'stop as soon as every device is in step or refusing an offered firmware (whatever its other settings)')
    .option('--refuse-firmware <percent>', 'share of devices that never install offered firmware (they take every other correction)', '0%')
    .option('--slow-clock <percent>', 'share of devices whose clock starts 10 minutes slow', '25%')
    .option('--offline <percent>', 'share of devices that go silent once, for 4 of their intervals', '0%')
    .option('--interrupt-downloads <percent>', 'share of devices whose first download of a file breaks halfway (then resumes with Range)', '0%')
    .option('--install-code-base <digits>', 'installer code of device i is base + i (default: random 8-digit codes)')
    .option('--concurrency <n>', 'requests in flight at most, over as many keep-alive connections', '100')
    .option('--audit-every <polls>', 'while auditing is on, post an audit record every this many polls (0: never)', '10')
    .option('--json', 'print the summary as one JSON object')
    .action(async (raw: RawOptions) => {
      const options = simulationOptions(raw);
      const simulation = startSimulation(options);
      onStopSignal(() => simulation.stop());
      const tty = process.stderr.isTTY === true;
      const writeProgress = () => {
        const line = progressLine(simulation.snapshot());
        process.stderr.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
      };
      const progress = setInterval(writeProgress, tty ? PROGRESS_EVERY_MS.tty : PROGRESS_EVERY_MS.log);
      const summary = await simulation.finished;
      clearInterval(progress);
      // The last state too, however short the run was.
      writeProgress();
      if (tty) process.stderr.write('\n');
      process.stdout.write(raw.json ? `${JSON.stringify(summary)}\n` : `${summaryText(summary)}\n`);
      if (summary.polls === 0) throw new Error(`no poll was answered (errors: ${countsText(summary.errors)})`);
      if (options.untilInStep && summary.in_step + summary.refusing_firmware < summary.okms) {
        throw new Error(`the fleet was not in step when the run ended: ${summary.in_step} of ${summary.okms} in step`);
      }
    });
}
