import { createHash, timingSafeEqual } from 'node:crypto';
import { badRequest, HttpError, notFound } from '../http/errors.ts';
import { recordChange } from '../audit/trail.ts';
import { actingCustomer } from '../auth/guard.ts';
import { findOwnedOkm, lockOkm, setOkmCustomer } from './admin-repository.ts';
import { toOkmRecord, type OkmChangeRequest } from './admin-service.ts';
import { okmChange } from './audit-view.ts';
import { claimGate, countFailedClaim } from './claim-policy.ts';
import { forgetClaimFailures, lockClaimFailures, pruneClaimFailures, recordFailedClaim } from './claim-repository.ts';
import type { OkmRecord } from './schemas.ts';

/** The one answer to every failed claim, so that a claim tells nothing about the serial number. */
export const CLAIM_FAILED = 'OKM not found or installer code does not match';

const digest = (code: string) => createHash('sha256').update(code).digest();

/** Equal codes, in a time that depends on neither code (both are hashed to one length first). */
function sameInstallCode(reported: string | null, given: string): boolean {
  return timingSafeEqual(digest(reported ?? ''), digest(given)) && reported !== null;
}

type ClaimOutcome = { kind: 'claimed'; record: OkmRecord } | { kind: 'failed' } | { kind: 'refused'; until: number };

/**
 * POST /api/v1/okms/{serial}/claim: the acting customer takes an OKM that no customer holds
 * by the installer code its device last reported. Every failure is counted against the
 * customer and the serial number (claim-policy.ts), in the same transaction that looked at
 * the OKM, and the counts commit with the 404. A refused claim (the customer blocked, or
 * slowed) is not counted and does not look at the OKM.
 */
export async function claimOkm(request: OkmChangeRequest, serialNumber: string, installCode: string): Promise<OkmRecord> {
  const acting = await actingCustomer(request.db, request.principal, request.customerName);
  if (acting === null) throw badRequest('customer: an admin token claims for the customer it names; or assign with PUT …/customer');
  let now = request.now;
  const outcome = await request.db.transaction().execute(async (trx): Promise<ClaimOutcome> => {
    const counts = await lockClaimFailures(trx, serialNumber, acting.id, now);
    // Attempts on one serial number wait for each other's lock: the rule is applied at the time
    // the lock was granted, so a slowdown set by the attempt just before is not measured from
    // an earlier clock (which would stretch it past CLAIM_SLOWDOWN_MS).
    now = Math.max(now, Date.now());
    const gate = claimGate(counts, now);
    if (gate.kind !== 'open') return { kind: 'refused', until: gate.until };
    // The same queries whether or not the serial number exists, so that timing does not tell.
    await lockOkm(trx, serialNumber);
    const owned = await findOwnedOkm(trx, serialNumber);
    const claimable = owned !== undefined && owned.okm.customerId === null;
    if (!sameInstallCode(claimable ? owned.okm.installCode : null, installCode)) {
      await recordFailedClaim(trx, serialNumber, acting.id, countFailedClaim(counts, now));
      return { kind: 'failed' };
    }
    await setOkmCustomer(trx, serialNumber, acting.id, now);
    await forgetClaimFailures(trx, serialNumber);
    const claimed = await findOwnedOkm(trx, serialNumber);
    // Never the installer code: it is what proves a claim.
    await recordChange(trx, request.source, okmChange('okm.claimed', serialNumber, acting.name, { before: { customer: null }, after: { customer: acting.name } }), now);
    return { kind: 'claimed', record: toOkmRecord(claimed!, request.settings.fleetPollingInterval) };
  });
  if (outcome.kind === 'claimed') return outcome.record;
  if (outcome.kind === 'refused') {
    // The same answer whether the customer is blocked (up to CLAIM_BLOCK_MS) or slowed (up to CLAIM_SLOWDOWN_MS): the 429 of contract §10.3.
    const retryAfterSeconds = Math.ceil((outcome.until - now) / 1000);
    throw new HttpError(429, 'TOO_MANY_REQUESTS', `Too many failed claims of OKM ${serialNumber}; retry in ${retryAfterSeconds} seconds`, {
      'retry-after': String(retryAfterSeconds),
    });
  }
  await pruneClaimFailures(request.db, now);
  throw notFound(CLAIM_FAILED);
}
