import type { Db } from '../db/database.ts';
import { notFound } from '../http/errors.ts';
import { checkOkmVisible, type OkmRequest } from './admin-service.ts';
import { findMessage } from './messages-repository.ts';
import { findPolledOkm, loadList } from './poll-repository.ts';
import { desiredState, effectiveReleases, pinsOf, type PollSettings } from './poll-service.ts';
import { findRolloutOffer, withRolloutOffer } from '../rollouts/poll-offer.ts';
import { parseReported } from './reported.ts';
import { RESOLVERS } from './resolvers/index.ts';
import type { Correction } from './resolvers/types.ts';
import type { DriftReport } from './schemas.ts';

/**
 * Every resolver's verdict on the OKM's last reported values, as the poll judges them (same
 * desired state, same resolver functions), without recording anything: the pending message
 * stays pending. The device clock is judged as it was at the last poll, so a device that
 * was in step is not reported as drifting merely because time has passed.
 */
export async function driftReport(request: OkmRequest & { settings: PollSettings }, serialNumber: string): Promise<DriftReport> {
  await checkOkmVisible(request, serialNumber);
  const db: Db = request.db;
  const row = await findPolledOkm(db, serialNumber);
  if (!row) throw notFound('OKM not found');
  const [releases, rollout, message] = await Promise.all([
    effectiveReleases(db, row),
    row.rollout_id === null ? undefined : findRolloutOffer(db, row.rollout_id, serialNumber, request.now),
    row.pending_message_id === null ? undefined : findMessage(db, row.pending_message_id),
  ]);
  const pendingMessage = message ? { id: message.id, type: message.type, payload: message.payload } : null;
  const polled = desiredState(row, withRolloutOffer(releases, pinsOf(row), rollout), pendingMessage, request.settings, row.last_sync_time ?? request.now);
  // The lists themselves, not the poll's placeholders: a report shows the items a correction sends.
  const [assetList, usersAssets] = await Promise.all([
    polled.assetList && loadList(db, serialNumber, 'asset_list'),
    polled.usersAssets && loadList(db, serialNumber, 'users_assets'),
  ]);
  const desired = { ...polled, assetList, usersAssets };
  const reported = parseReported(row.reported === null ? {} : (JSON.parse(row.reported) as Record<string, unknown>));

  const resolvers = RESOLVERS.map(({ name, resolve }) => {
    const correction = resolve(desired, reported);
    return { name, in_step: correction === undefined, correction: correction ?? null };
  });
  const next: Correction | null = resolvers.find((verdict) => !verdict.in_step)?.correction ?? null;
  return { serial_number: serialNumber, in_step: next === null, next, resolvers };
}
