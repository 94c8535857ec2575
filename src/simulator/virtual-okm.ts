import { createHash, type Hash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { Correction } from '../device/resolvers/types.ts';
import { DEFAULT_RETRY_POLICY } from '../shared/retry-policy.ts';
import { firmwareOffers, parametersAfter, type FirmwareOfferReply, type FirmwareParameter } from './device.ts';
import type { DeviceState, SimulationStats } from './stats.ts';

/** The URL built into every device: it answers where the config endpoint is. */
export const BOOTSTRAP_PATH = '/embeddedv1/kas/config';
/** What a device reports before anyone corrected it. */
export const FACTORY_FIRMWARE = '1.0.0';
/** Devices whose clock starts this far behind (`--slow-clock`), so that the date-time resolver has work. */
export const CLOCK_SKEW_MS = -600_000;
/**
 * A refuser takes the server to have dropped the offers it refused once this many polls in a
 * row brought none: the default retry policy holds an offer back for at most
 * `maxBackoffPolls` polls, so a longer gap means the offer was withdrawn (rollout paused or
 * aborted, latest changed back). Under a policy with a longer cap a refuser reads as in step
 * during its long holds, until the next offer.
 */
export const REFUSAL_LAPSES_AFTER_POLLS = DEFAULT_RETRY_POLICY.maxBackoffPolls + 1;
const MIN_INTERVAL_S = 5;
const MAX_INTERVAL_S = 3600;

/** What the fleet chose for one device. */
export interface DeviceProfile {
  index: number;
  serial: string;
  installCode: string;
  refusesFirmware: boolean;
  /** Its clock starts CLOCK_SKEW_MS off. */
  slowClock: boolean;
  /** Cuts its first download of each file halfway, then resumes it with a Range request. */
  interruptsDownloads: boolean;
  /** Goes silent once, after this many polls; undefined: never. */
  offlineAfterPolls: number | undefined;
}

/** What one device's round of requests needs from the fleet. */
export interface DeviceContext {
  http: Dispatcher;
  /** The server's origin (`--url`): only files and audit URLs there are fetched. */
  origin: string;
  stats: SimulationStats;
  /** Post audit records every this many polls while auditing is on; 0 never. */
  auditEvery: number;
}

interface PartialDownload {
  url: string;
  sha256: string;
  etag: string | undefined;
  received: number;
  hash: Hash;
}

/** An HTTP status outside what the call expects, counted as `http_<status>`. */
class UnexpectedStatus extends Error {
  constructor(readonly statusCode: number) {
    super(`HTTP ${statusCode}`);
  }
}

/** The kind an error is counted under: `http_503`, `econnrefused`, `socket`, `headers_timeout`, `invalid_reply`… */
export function errorKind(error: unknown): string {
  if (error instanceof UnexpectedStatus) return `http_${error.statusCode}`;
  if (error instanceof SyntaxError) return 'invalid_reply';
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code.replace(/^UND_ERR_/, '').toLowerCase();
  return 'other';
}

const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);

/**
 * One virtual OKM: what it reports, its clock, and one round of its requests (bootstrap
 * once, the config poll, then whatever the answer asks: a firmware download, an audit post).
 */
export class VirtualOkm {
  state: DeviceState = 'new';
  /** Start of the convergence clock (performance.now() ms), while one runs. */
  changeStartedAt: number | undefined;
  /** Silent for a while (OFFLINE_INTERVALS of its intervals). */
  offline = false;
  private beenInStep = false;
  /** The poll (count of polls answered) on which the convergence clock started. */
  private changeStartPoll = 0;
  /**
   * The kinds of firmware it refused an offer of that the server still holds for it, as far
   * as it can tell. Non-empty: the device is `refusing_firmware`.
   */
  private readonly refused = new Set<FirmwareParameter>();
  private pollsWithoutOffer = 0;
  /** While refusing: answered {} since its last other correction, so every setting but firmware is in step. */
  private otherwiseInStep = false;
  /** While refusing: that moment has been counted for this convergence clock. */
  private otherwiseInStepCounted = false;
  private configPath: string | undefined;
  private readonly parameters: Record<string, unknown>;
  private clockOffsetMs: number;
  private pollsSinceAudit = 0;
  private pollsAnswered = 0;
  private download: PartialDownload | undefined;
  private readonly interruptedUrls = new Set<string>();

  constructor(
    readonly profile: DeviceProfile,
    private readonly defaultIntervalSeconds: number,
  ) {
    this.clockOffsetMs = profile.slowClock ? CLOCK_SKEW_MS : 0;
    this.parameters = {
      kasFirmware: FACTORY_FIRMWARE,
      batchKeyFirmware: FACTORY_FIRMWARE,
      wirelessKeyFirmware: FACTORY_FIRMWARE,
      retailCfg: 1,
      cacheMode: 0,
      pollingInterval: defaultIntervalSeconds,
      installCode: profile.installCode,
    };
  }

  /** Seconds until the next poll, as the device counts them: the interval it was told, else its own. */
  intervalSeconds(): number {
    const told = this.parameters.pollingInterval;
    return isInteger(told) && told >= MIN_INTERVAL_S && told <= MAX_INTERVAL_S ? told : this.defaultIntervalSeconds;
  }

  /** True once, on the poll after which the device goes silent for a while. */
  goesOfflineNow(): boolean {
    return this.profile.offlineAfterPolls !== undefined && this.pollsAnswered === this.profile.offlineAfterPolls;
  }

  /** One round: never throws; failures are counted by kind and the device tries again at its next poll. */
  async round(context: DeviceContext, now: () => number): Promise<void> {
    try {
      this.configPath ??= await this.bootstrap(context);
      const startedAt = now();
      const answer = await this.poll(context);
      this.pollsAnswered++;
      context.stats.polls++;
      await this.handle(answer, context, startedAt, now);
      await this.postAuditIfDue(context);
    } catch (error) {
      context.stats.error(errorKind(error));
    }
  }

  private async bootstrap({ http }: DeviceContext): Promise<string> {
    const { configUrl } = (await expectJson(http, { method: 'GET', path: BOOTSTRAP_PATH }, 200)) as { configUrl?: unknown };
    if (typeof configUrl !== 'string') throw new SyntaxError('bootstrap reply without configUrl');
    this.parameters.configUrl = configUrl;
    return new URL(configUrl, 'http://device.invalid').pathname;
  }

  private query(): string {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(this.parameters)) if (value !== undefined) query.append(name, String(value));
    query.append('kasDateTime', String(Date.now() + this.clockOffsetMs));
    return query.toString();
  }

  /** The config poll: 204 (just enrolled, null) or the correction. */
  private async poll({ http }: DeviceContext): Promise<Correction | null> {
    const response = await http.request({ method: 'GET', path: `${this.configPath}/${encodeURIComponent(this.profile.serial)}?${this.query()}` });
    if (response.statusCode === 204) {
      await response.body.dump();
      return null;
    }
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new UnexpectedStatus(response.statusCode);
    }
    const answer: unknown = await response.body.json();
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) throw new SyntaxError('config reply is not a JSON object');
    return answer as Correction;
  }

  private async handle(answer: Correction | null, context: DeviceContext, startedAt: number, now: () => number): Promise<void> {
    const { stats } = context;
    const resolver = answer === null ? undefined : Object.keys(answer)[0];
    const offers = answer === null ? [] : firmwareOffers(answer);
    if (this.profile.refusesFirmware) this.noteOffers(offers, stats);
    if (this.refused.size > 0) {
      await this.handleWhileRefusing(answer, resolver, offers.length > 0, context, startedAt, now);
      return;
    }
    if (answer !== null && resolver === undefined) {
      stats.inStepAnswers++;
      if (this.changeStartedAt !== undefined) stats.converged(now() - this.changeStartedAt, this.beenInStep);
      this.changeStartedAt = undefined;
      this.beenInStep = true;
      this.moveTo('in_step', stats);
      return;
    }
    this.startClock(startedAt);
    if (answer === null || resolver === undefined) {
      stats.enrolled++;
      return;
    }
    stats.correction(resolver);
    this.moveTo('drifting', stats);
    await this.apply(answer, offers, context);
  }

  /**
   * What a refuser makes of this poll's offers: each one refused is remembered until the
   * server has gone REFUSAL_LAPSES_AFTER_POLLS polls without offering any firmware.
   */
  private noteOffers(offers: [FirmwareParameter, FirmwareOfferReply][], stats: SimulationStats): void {
    if (offers.length > 0) {
      this.pollsWithoutOffer = 0;
      for (const [name] of offers) this.refused.add(name);
      return;
    }
    if (this.refused.size === 0 || ++this.pollsWithoutOffer < REFUSAL_LAPSES_AFTER_POLLS) return;
    this.refused.clear();
    if (this.otherwiseInStep) stats.refusers.otherwiseInStep--;
    this.otherwiseInStep = false;
  }

  /**
   * A refuser stays `refusing_firmware` while the server still has an offer for it: it turns
   * the offer down and applies every other correction, which the retry policy sends on the
   * polls it holds the offer back. A {} on such a poll is the only sign a device gets that
   * everything but its firmware is in step; its convergence clock keeps running.
   */
  private async handleWhileRefusing(
    answer: Correction | null,
    resolver: string | undefined,
    offered: boolean,
    context: DeviceContext,
    startedAt: number,
    now: () => number,
  ): Promise<void> {
    const { stats } = context;
    this.startClock(startedAt);
    this.moveTo('refusing_firmware', stats);
    if (answer === null) {
      stats.enrolled++;
      return;
    }
    if (resolver === undefined) {
      stats.inStepAnswers++;
      if (!this.otherwiseInStep) stats.refusers.otherwiseInStep++;
      this.otherwiseInStep = true;
      if (!this.otherwiseInStepCounted && this.changeStartedAt !== undefined) {
        stats.refuserOtherwiseInStep(now() - this.changeStartedAt, this.pollsAnswered - this.changeStartPoll + 1);
        this.otherwiseInStepCounted = true;
      }
      return;
    }
    stats.correction(resolver);
    if (offered) {
      stats.firmware.refused++;
    } else {
      stats.refusers.correctionsApplied++;
      if (this.otherwiseInStep) stats.refusers.otherwiseInStep--;
      this.otherwiseInStep = false;
    }
    await this.apply(answer, [], context);
  }

  private startClock(startedAt: number): void {
    if (this.changeStartedAt !== undefined) return;
    this.changeStartedAt = startedAt;
    this.changeStartPoll = this.pollsAnswered;
    this.otherwiseInStepCounted = false;
  }

  /** Takes a correction: installs the firmware `install` lists, drops any other offer, applies the rest. */
  private async apply(answer: Correction, install: [FirmwareParameter, FirmwareOfferReply][], context: DeviceContext): Promise<void> {
    const changes = parametersAfter(answer);
    for (const [name] of firmwareOffers(answer)) delete changes[name];
    for (const [name, offer] of install) await this.install(name, offer, context);
    if (isInteger(changes.kasDateTime)) this.clockOffsetMs = changes.kasDateTime - Date.now();
    delete changes.kasDateTime;
    Object.assign(this.parameters, changes);
  }

  private moveTo(state: DeviceState, stats: SimulationStats): void {
    stats.moved(this.state, state);
    this.state = state;
  }

  /**
   * Fetches an offered file from this server (resuming a cut download with Range and
   * If-Range), checks its SHA-256 and only then reports the new version. A file on another
   * host is taken as installed without fetching: the simulator stands in for devices, not
   * for the networks they reach.
   */
  private async install(name: FirmwareParameter, offer: FirmwareOfferReply, { http, origin, stats }: DeviceContext): Promise<void> {
    const url = new URL(offer.url, origin);
    if (url.origin !== origin) {
      stats.firmware.external++;
      this.parameters[name] = offer.version;
      return;
    }
    const resumable = this.download?.url === url.href && this.download.sha256 === offer.sha256 ? this.download : undefined;
    const headers: Record<string, string> = resumable ? { range: `bytes=${resumable.received}-`, ...(resumable.etag && { 'if-range': resumable.etag }) } : {};
    stats.firmware.downloads++;
    const response = await http.request({ method: 'GET', path: `${url.pathname}${url.search}`, headers });
    if (response.statusCode !== 200 && response.statusCode !== 206) {
      await response.body.dump();
      throw new UnexpectedStatus(response.statusCode);
    }
    if (response.statusCode === 206 && resumable) stats.firmware.resumed++;
    const etag = response.headers.etag;
    const download: PartialDownload =
      response.statusCode === 206 && resumable
        ? resumable
        : { url: url.href, sha256: offer.sha256, etag: typeof etag === 'string' ? etag : undefined, received: 0, hash: createHash('sha256') };
    this.download = download;
    const cutAt = this.profile.interruptsDownloads && !this.interruptedUrls.has(url.href) ? halfOf(response.headers['content-length']) : undefined;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      const take = cutAt === undefined ? chunk : chunk.subarray(0, Math.max(0, cutAt - download.received));
      download.hash.update(take);
      download.received += take.length;
      stats.firmware.bytes += take.length;
      if (cutAt !== undefined && download.received >= cutAt) {
        // Leaving the loop destroys the body: the connection drops mid-file, as on a flaky link.
        this.interruptedUrls.add(url.href);
        stats.firmware.interrupted++;
        return;
      }
    }
    this.download = undefined;
    if (download.hash.digest('hex') !== offer.sha256.toLowerCase()) {
      stats.firmware.checksum_failures++;
      stats.error('checksum_mismatch');
      return;
    }
    stats.firmware.installed++;
    this.parameters[name] = offer.version;
  }

  /** While auditing is on (retail config 2 and an audit URL), one record every `auditEvery` polls. */
  private async postAuditIfDue({ http, origin, stats, auditEvery }: DeviceContext): Promise<void> {
    if (auditEvery === 0 || this.parameters.retailCfg !== 2 || typeof this.parameters.auditUrl !== 'string') return;
    if (++this.pollsSinceAudit < auditEvery) return;
    this.pollsSinceAudit = 0;
    const url = new URL(`${this.parameters.auditUrl}/${encodeURIComponent(this.profile.serial)}`, origin);
    if (url.origin !== origin) return;
    const record = { event: 'key_checkout', at: Date.now() + this.clockOffsetMs, user_id: 100_000 + (this.profile.index % 1000) };
    await expectJson(http, { method: 'POST', path: url.pathname, headers: { 'content-type': 'application/json' }, body: JSON.stringify([record]) }, 201);
    stats.audit.posts++;
    stats.audit.records++;
  }
}

function halfOf(contentLength: string | string[] | undefined): number | undefined {
  const size = Number(contentLength);
  return Number.isInteger(size) && size >= 2 ? Math.floor(size / 2) : undefined;
}

async function expectJson(http: Dispatcher, options: Dispatcher.RequestOptions, status: number): Promise<unknown> {
  const response = await http.request(options);
  if (response.statusCode !== status) {
    await response.body.dump();
    throw new UnexpectedStatus(response.statusCode);
  }
  return response.body.json();
}
