import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import type { ChangeSource } from '../../src/audit/trail.ts';
import { addFileRelease, setLatest } from '../../src/firmware/catalog-service.ts';
import type { FirmwareKind } from '../../src/firmware/version.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { rolloutEventSink } from '../../src/rollouts/events.ts';
import type { RolloutView } from '../../src/rollouts/schemas.ts';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import { serialNumber, startSimulation, type SimulationOptions } from '../../src/simulator/fleet.ts';
import type { Summary } from '../../src/simulator/stats.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { KEYFLEET_SOURCES, runKeyfleet } from '../helpers/cli.ts';
import { eventually } from '../helpers/eventually.ts';
import { freePort } from '../helpers/server-process.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { storedReportValues } from '../../src/shared/reported-values.ts';

// Devices and the server both count 5 s intervals; at speed 25 one lasts 200 ms.
const INTERVAL_S = 5;
const SPEED = 25;
const OKMS = 50;
// Bounds, not expectations: a run ends as soon as its fleet is in step (a few seconds), but a
// shared 2-core host under a load of 30+ has taken over 30 s.
const PATIENCE_MS = 120_000;

async function listeningApp(kind: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}): Promise<{ t: TestApp; url: string }> {
  const t = await buildTestApp(kind, { FLEET_POLLING_INTERVAL: String(INTERVAL_S), ...env });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return { t, url: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}` };
}

/** Who the test's releases are recorded as having been made by. */
const RELEASER: ChangeSource = { actor: { kind: 'token', id: 'simulate-test', name: 'simulate test' }, requestId: null, ip: null, userAgent: null };

/** Uploads a file release of `bytes` bytes and (unless told otherwise) makes it the fleet's latest of its kind. */
async function releaseFile(t: TestApp, kind: FirmwareKind, version: string, bytes: number, latest = true): Promise<void> {
  const file = Buffer.alloc(bytes, version);
  await addFileRelease(t.db, t.settings, RELEASER, kind, version, Readable.from([file]), file.length, Date.now());
  if (latest) await setLatest(t.db, RELEASER, kind, version);
}

function options(url: string, prefix: string, overrides: Partial<SimulationOptions> = {}): SimulationOptions {
  return {
    url,
    okms: OKMS,
    prefix,
    intervalSeconds: INTERVAL_S,
    speed: SPEED,
    durationMs: PATIENCE_MS,
    refuseFirmwarePercent: 0,
    slowClockPercent: 25,
    offlinePercent: 0,
    interruptDownloadsPercent: 0,
    installCodeBase: undefined,
    concurrency: 20,
    auditEvery: 1,
    untilInStep: true,
    ...overrides,
  };
}

const okmsOf = (t: TestApp, prefix: string) =>
  t.db
    .selectFrom('okms')
    .leftJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number')
    .select(['okms.serial_number', 'okms.firmware_version', 'okms.last_correction', 'okms.stuck_resolver', 'okm_polls.install_code', 'okm_polls.reported'])
    .where('okms.serial_number', 'like', `${prefix}%`)
    .execute();

/** Each resolver's verdict on the OKM's last reported values (GET …/drift): name → in step. */
async function driftOf(t: TestApp, token: string, serial: string): Promise<Record<string, boolean>> {
  const response = await t.app.inject({ method: 'GET', url: `/api/v1/okms/${serial}/drift`, headers: { authorization: `Bearer ${token}` } });
  assert.equal(response.statusCode, 200, response.body);
  const { resolvers } = response.json().data as { resolvers: { name: string; in_step: boolean }[] };
  return Object.fromEntries(resolvers.map(({ name, in_step }) => [name, in_step]));
}

const reportedOf = (okm: { reported: string | null }): Record<string, string> => (okm.reported === null ? {} : storedReportValues(okm.reported));

/**
 * A customer's 80 OKMs (cache mode 2 configured), a KAS release that is not the fleet latest,
 * and a one-group rollout of it with these thresholds, started through the API; the sweep is
 * the test's to run (ROLLOUT_SWEEP_INTERVAL_MS 0). 5 % of a fleet of that size refuse: 4.
 */
async function startRolloutOfRefusers(t: TestApp, thresholds: { success_threshold: number; error_threshold: number; update_timeout: string }) {
  const okms = 80;
  const refusers = 4;
  await releaseFile(t, 'kas', '1.5.0', 1000, false);
  const customer = await createTestCustomer(t, 'acme');
  for (let index = 0; index < okms; index++) {
    await insertOkm(t.db, serialNumber('ROLL-', index, okms), customer.id, { ...UNCONFIGURED_OKM, cacheMode: 2 }, Date.now());
  }
  const token = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });
  const call = async (method: 'GET' | 'POST', path: string, payload?: object) => {
    const response = await t.app.inject({ method, url: path, headers: { authorization: `Bearer ${token}` }, ...(payload && { payload }) });
    assert.ok(response.statusCode < 300, `${method} ${path}: ${response.statusCode} ${response.body}`);
    return response.json().data as unknown;
  };
  const created = (await call('POST', '/api/v1/rollouts', { kind: 'kas', version: '1.5.0', groups: [{ percent: 100 }], ...thresholds })) as RolloutView;
  await call('POST', `/api/v1/rollouts/${created.id}/start`);
  const rollout = () => call('GET', `/api/v1/rollouts/${created.id}`) as Promise<RolloutView>;
  return { okms, refusers, token, call, created, rollout };
}

forEachDatabase('keyfleet simulate against a real server', (kind) => {
  test('50 virtual OKMs apply every correction, install the latest firmware file and reach in step; auditing devices post records', async () => {
    const { t, url } = await listeningApp(kind);
    try {
      await releaseFile(t, 'kas', '1.5.0', 10_000);
      // A fifth of the fleet fully configured, so that every resolver has something to correct.
      for (let index = 0; index < OKMS; index += 5) {
        await insertOkm(t.db, serialNumber('CONV-', index, OKMS), null, {
          ...UNCONFIGURED_OKM,
          cacheMode: 2,
          keyCheckoutWindow: { time: 30, contact: 'closed' },
          auditingEnabled: true,
          assetList: ['LOCK-1', 'LOCK-2'],
          usersAssets: [{ user_id: 1, permissions: [1, 17] }],
          pollingInterval: 6,
        }, Date.now());
      }

      const summary = await startSimulation(options(url, 'CONV-', { installCodeBase: '4200000' })).finished;

      assert.equal(summary.in_step, OKMS);
      assert.deepEqual(summary.errors, {});
      for (const resolver of ['kasFirmware', 'kasDateTime', 'cacheMode', 'keyCheckoutWindowTime', 'retailCfg', 'assetList', 'usersAssets', 'auditUrl', 'pollingInterval']) {
        assert.ok((summary.corrections[resolver] ?? 0) > 0, `no ${resolver} correction in ${JSON.stringify(summary.corrections)}`);
      }
      assert.equal(summary.firmware.installed, OKMS);
      assert.equal(summary.firmware.bytes, OKMS * 10_000);
      assert.equal(summary.convergence.initial.count, OKMS);
      assert.ok(summary.audit.posts > 0);
      const okms = await okmsOf(t, 'CONV-');
      assert.equal(okms.length, OKMS);
      assert.ok(okms.every((okm) => okm.firmware_version === '1.5.0' && okm.last_correction === null));
      assert.deepEqual(okms.map((okm) => okm.install_code).sort(), Array.from({ length: OKMS }, (_, index) => String(4_200_000 + index)));
      const audited = await t.db.selectFrom('okm_audit_records').select('okm_serial').distinct().execute();
      assert.equal(audited.length, OKMS / 5);
    } finally {
      await t.close();
    }
  });

  test('--refuse-firmware 20% under the retry policy (on by default): those devices turn down every offer and stay refusing firmware, yet take the clock, cache mode and audit URL corrections sent between offers; the rest reach in step', async () => {
    const { t, url } = await listeningApp(kind);
    try {
      await releaseFile(t, 'kas', '1.5.0', 1000);
      const refusers = OKMS / 5;

      const simulation = startSimulation(options(url, 'REFUSE-', { refuseFirmwarePercent: 20, slowClockPercent: 100, untilInStep: false }));
      await eventually(
        () => {
          const snapshot = simulation.snapshot();
          return snapshot.in_step === OKMS - refusers && snapshot.refusing_firmware_otherwise_in_step === refusers;
        },
        PATIENCE_MS,
        'the refusers in step on everything but firmware',
      );
      simulation.stop();
      const summary = await simulation.finished;

      assert.equal(summary.in_step, OKMS - refusers);
      assert.equal(summary.refusing_firmware, refusers, 'a {} on a poll whose offer was held back does not count a refuser in step');
      assert.equal(summary.refusing_firmware_otherwise_in_step, refusers);
      assert.equal(summary.convergence.still_converging, refusers);
      assert.equal(summary.refusers.devices, refusers);
      assert.equal(summary.refusers.otherwise_in_step.count, refusers);
      // The policy's first rounds: 3 offers, 1 poll held back, 3 offers, 2 held back, 3 offers, 4 held back.
      assert.ok(summary.refusers.otherwise_in_step.max_polls! <= 20, JSON.stringify(summary.refusers));
      assert.ok(summary.refusers.corrections_applied >= 3 * refusers, 'clock, cache mode and audit URL, each');
      assert.ok(summary.firmware.refused >= 3 * refusers);
      assert.equal(summary.firmware.installed, OKMS - refusers);
      const token = await issueTestToken(t, { scopes: ['admin'] });
      const refusing = (await okmsOf(t, 'REFUSE-')).filter((okm) => okm.firmware_version === '1.0.0');
      assert.equal(refusing.length, refusers);
      for (const okm of refusing) {
        assert.equal(reportedOf(okm).cacheMode, '1');
        assert.equal(reportedOf(okm).auditUrl, t.settings.auditUrl);
        assert.equal(okm.stuck_resolver, 'kasFirmware');
        const drift = await driftOf(t, token, okm.serial_number);
        assert.deepEqual(
          Object.keys(drift).filter((name) => !drift[name]),
          ['kasFirmware'],
          `${okm.serial_number}: only its firmware is out of step`,
        );
      }
    } finally {
      await t.close();
    }
  });

  test('--refuse-firmware 20% with FIRMWARE_RETRY_POLICY={"offers":0} (strict seed order): refusers are offered firmware on every poll, so their clock, cache mode and audit URL are never corrected', async () => {
    const { t, url } = await listeningApp(kind, { FIRMWARE_RETRY_POLICY: '{"offers":0}' });
    try {
      await releaseFile(t, 'kas', '1.5.0', 1000);
      const refusers = OKMS / 5;

      const simulation = startSimulation(options(url, 'STRICT-', { refuseFirmwarePercent: 20, slowClockPercent: 100, untilInStep: false }));
      // Past the 14 polls in which the retry policy brings every refuser's other settings in step.
      await eventually(() => simulation.snapshot().polls >= 25 * OKMS, PATIENCE_MS, '25 polls a device');
      simulation.stop();
      const summary = await simulation.finished;

      assert.equal(summary.in_step, OKMS - refusers);
      assert.equal(summary.refusing_firmware, refusers);
      assert.equal(summary.refusing_firmware_otherwise_in_step, 0);
      assert.equal(summary.refusers.otherwise_in_step.count, 0);
      assert.equal(summary.refusers.corrections_applied, 0);
      assert.ok(summary.firmware.refused >= 20 * refusers, `refused ${summary.firmware.refused}`);
      const token = await issueTestToken(t, { scopes: ['admin'] });
      const refusing = (await okmsOf(t, 'STRICT-')).filter((okm) => okm.firmware_version === '1.0.0');
      assert.equal(refusing.length, refusers);
      for (const okm of refusing) {
        assert.equal(okm.last_correction, 'kasFirmware');
        assert.equal(reportedOf(okm).cacheMode, '0');
        const drift = await driftOf(t, token, okm.serial_number);
        assert.deepEqual(
          ['kasFirmware', 'kasDateTime', 'cacheMode', 'auditUrl'].map((name) => drift[name]),
          [false, false, false, false],
          `${okm.serial_number}: ${JSON.stringify(drift)}`,
        );
      }
    } finally {
      await t.close();
    }
  });

  test('a KAS rollout with 5% refusers: under the retry policy their clocks and cache modes converge while the rollout still offers them firmware; they fail after update_timeout, the error threshold pauses the rollout, and once no offer is left they read as in step', async () => {
    // The test runs the rollout sweep itself (as test/rollouts does): no offer is judged failed before it has looked at the refusers.
    const { t, url } = await listeningApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    try {
      // 95 % can update: a success threshold of 99 is never met, so the refusers' failures decide (5 % > 4 %).
      const { okms, refusers, token, call, created, rollout } = await startRolloutOfRefusers(t, { success_threshold: 99, error_threshold: 4, update_timeout: '2s' });

      const simulation = startSimulation(options(url, 'ROLL-', { okms, refuseFirmwarePercent: 5, slowClockPercent: 100, untilInStep: false }));
      try {
        await eventually(async () => (await rollout()).totals.updated === okms - refusers, PATIENCE_MS, 'every other OKM updated');
        const refusing = (await okmsOf(t, 'ROLL-')).filter((okm) => okm.firmware_version !== '1.5.0').map((okm) => okm.serial_number);
        assert.equal(refusing.length, refusers);
        const convergedWhileOffered = await eventually(
          async () => {
            const drifts = await Promise.all(refusing.map((serial) => driftOf(t, token, serial)));
            if (!drifts.every((drift) => drift.kasDateTime && drift.cacheMode && !drift.kasFirmware)) return undefined;
            return { rollout: await rollout(), snapshot: simulation.snapshot() };
          },
          PATIENCE_MS,
          "the refusers' clock and cache mode in step",
        );
        assert.equal(convergedWhileOffered.rollout.state, 'running', 'converged through the retry policy, not because the offer was withdrawn');
        assert.equal(convergedWhileOffered.rollout.totals.offered, refusers);
        assert.equal(convergedWhileOffered.snapshot.refusing_firmware, refusers);

        const paused = await eventually(
          async () => {
            await sweepRollouts(t.db, t.dialect, rolloutEventSink, Date.now());
            const view = await rollout();
            return view.state === 'paused' && view;
          },
          PATIENCE_MS,
          'the rollout paused',
        );
        assert.equal(paused.state_reason, 'error_threshold');
        assert.equal(paused.totals.updated, okms - refusers);
        assert.equal(paused.totals.failed, refusers);
        const failed = (await call('GET', `/api/v1/rollouts/${created.id}/okms?state=failed`)) as { serial_number: string }[];
        assert.deepEqual(failed.map((okm) => okm.serial_number).sort(), [...refusing].sort());

        // A paused rollout offers nothing: past the longest hold, a refuser stops counting the offer as standing.
        await eventually(() => simulation.snapshot().in_step === okms, PATIENCE_MS, 'the whole fleet in step once no offer is left');
      } finally {
        simulation.stop();
      }
      const summary = await simulation.finished;
      assert.equal(summary.refusers.devices, refusers);
      assert.equal(summary.refusers.otherwise_in_step.count, refusers);
      assert.equal(summary.refusing_firmware, 0);
      assert.deepEqual(summary.errors, {});
      const okmsAtEnd = await okmsOf(t, 'ROLL-');
      assert.ok(okmsAtEnd.every((okm) => reportedOf(okm).cacheMode === '2'));
    } finally {
      await t.close();
    }
  });

  test(
    'a KAS rollout that finishes (success threshold 90) while some refusers are still offered: they count as failed once update_timeout has passed, as they keep polling',
    async () => {
      const { t, url } = await listeningApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
      try {
        const { okms, refusers, call, created, rollout } = await startRolloutOfRefusers(t, { success_threshold: 90, error_threshold: 10, update_timeout: '5s' });
        const simulation = startSimulation(options(url, 'ROLL-', { okms, refuseFirmwarePercent: 5, untilInStep: false }));
        try {
          await eventually(async () => (await rollout()).totals.updated === okms - refusers, PATIENCE_MS, 'every other OKM updated');
          await sweepRollouts(t.db, t.dialect, rolloutEventSink, Date.now());
          const finished = await rollout();
          assert.equal(finished.state, 'finished');
          const offered = (await call('GET', `/api/v1/rollouts/${created.id}/okms?state=offered`)) as { serial_number: string; offered_at: string }[];
          assert.ok(offered.length > 0, 'a refuser was still within update_timeout when the rollout finished');
          const timedOutAt = Math.max(...offered.map((okm) => Date.parse(okm.offered_at))) + 5_000;
          // Past the timeout, with a poll of each refuser after it.
          await eventually(() => Date.now() > timedOutAt + (2 * INTERVAL_S * 1000) / SPEED, PATIENCE_MS, 'update_timeout passed');
          await sweepRollouts(t.db, t.dialect, rolloutEventSink, Date.now());

          const later = await rollout();
          assert.equal(later.state, 'finished');
          assert.deepEqual({ offered: later.totals.offered, failed: later.totals.failed }, { offered: 0, failed: refusers });
        } finally {
          simulation.stop();
          await simulation.finished;
        }
      } finally {
        await t.close();
      }
    },
  );

  test('a download cut halfway is resumed with a Range request: every byte is fetched once and the checksum holds', async () => {
    const { t, url } = await listeningApp(kind);
    try {
      const size = 200_000;
      await releaseFile(t, 'kas', '1.5.0', size);

      const summary = await startSimulation(options(url, 'RESUME-', { interruptDownloadsPercent: 100 })).finished;

      assert.equal(summary.in_step, OKMS);
      assert.equal(summary.firmware.interrupted, OKMS);
      assert.equal(summary.firmware.resumed, OKMS);
      assert.equal(summary.firmware.installed, OKMS);
      assert.equal(summary.firmware.checksum_failures, 0);
      assert.equal(summary.firmware.bytes, OKMS * size);
    } finally {
      await t.close();
    }
  });

  test('errors are counted by kind once the server stops', async () => {
    const { t, url } = await listeningApp(kind);
    let simulation: ReturnType<typeof startSimulation> | undefined;
    try {
      simulation = startSimulation(options(url, 'STOP-', { untilInStep: false }));
      await eventually(() => simulation!.snapshot().polls >= OKMS, PATIENCE_MS, 'first polls');
      await t.app.close();
      await new Promise((resolve) => setTimeout(resolve, (3 * INTERVAL_S * 1000) / SPEED));
      simulation.stop();
      const summary = await simulation.finished;

      assert.ok((summary.errors.econnrefused ?? 0) > 0, `errors: ${JSON.stringify(summary.errors)}`);
    } finally {
      simulation?.stop();
      await t.close();
    }
  });

  test('the CLI: a new latest firmware and a new polling interval converge while it runs, and --json reports the times after the change', async () => {
    const { t, url } = await listeningApp(kind);
    let child: ChildProcess | undefined;
    try {
      await releaseFile(t, 'kas', '1.5.0', 1000);
      const simulator = spawn(
        process.execPath,
        [...KEYFLEET_SOURCES, 'simulate', '--url', url, '--okms', String(OKMS), '--prefix', 'CLI-', '--interval', String(INTERVAL_S), '--speed', String(SPEED), '--json'],
        { env: { PATH: process.env.PATH, LOG_LEVEL: 'silent' } },
      );
      let stdout = '';
      let stderr = '';
      child = simulator;
      simulator.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      simulator.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => simulator.once('exit', resolve));
      const fleetIs = async (firmware: string, interval: string) => {
        const okms = await okmsOf(t, 'CLI-');
        return (
          okms.length === OKMS &&
          okms.every((okm) => okm.firmware_version === firmware && okm.last_correction === null && reportedOf(okm).pollingInterval === interval)
        );
      };
      await eventually(() => fleetIs('1.5.0', '5'), PATIENCE_MS, 'first convergence');

      await releaseFile(t, 'kas', '2.0.0', 1000);
      await eventually(() => fleetIs('2.0.0', '5'), PATIENCE_MS, 'convergence on the new firmware');
      // One OKM at a time, as the admin API changes them (one statement over the fleet could deadlock with polls on PostgreSQL).
      for (let index = 0; index < OKMS; index++) {
        await t.db.updateTable('okms').set({ polling_interval: 6 }).where('serial_number', '=', serialNumber('CLI-', index, OKMS)).execute();
      }
      await eventually(() => fleetIs('2.0.0', '6'), PATIENCE_MS, 'convergence on the new interval');
      simulator.kill('SIGINT');

      assert.equal(await exited, 0, stderr);
      const summary = JSON.parse(stdout) as Summary;
      assert.equal(summary.in_step, OKMS);
      assert.equal(summary.convergence.after_change.count, 2 * OKMS);
      assert.ok(summary.convergence.after_change.p50_ms! > 0 && summary.convergence.after_change.p99_ms! >= summary.convergence.after_change.p50_ms!);
      assert.ok(summary.corrections.kasFirmware! >= 2 * OKMS && summary.corrections.pollingInterval! >= OKMS);
      assert.equal(summary.firmware.installed, 2 * OKMS);
      assert.match(stderr, /polls\/s \| in step/);
    } finally {
      child?.kill('SIGKILL');
      await t.close();
    }
  });
});

test('the CLI: a server that never answers is exit 1 with the errors by kind; a bad option is exit 2', async () => {
  const url = `http://127.0.0.1:${await freePort()}`;

  const unreachable = await runKeyfleet({}, 'simulate', '--url', url, '--okms', '3', '--interval', '5', '--speed', '50', '--duration', '1s', '--json');
  const usage = await runKeyfleet({}, 'simulate', '--url', `${url}/api`, '--okms', '3');

  assert.equal(unreachable.exitCode, 1);
  assert.ok((JSON.parse(unreachable.stdout) as Summary).errors.econnrefused! > 0);
  assert.match(unreachable.stderr, /no poll was answered/);
  assert.equal(usage.exitCode, 2);
  assert.match(usage.stderr, /--url: expected an http\(s\) origin without a path/);
});
