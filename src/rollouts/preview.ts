import { actingCustomer, type Principal } from '../auth/guard.ts';
import type { Db } from '../db/database.ts';
import { findRelease } from '../firmware/repository.ts';
import { badRequest } from '../http/errors.ts';
import { groupBoundaries } from './model.ts';
import type { CreateRolloutBody } from './schemas.ts';
import { checkGroups, rolloutCandidates } from './service.ts';

export interface RolloutPreview {
  /** OKMs the rollout would reach: below the version, no pin of the kind, in no other unfinished rollout. */
  eligible: number;
  /** OKMs that match but already report the version or newer: in no group. */
  up_to_date: number;
  groups: { percent: number; okms: number }[];
}

/**
 * What creating the rollout would choose now, without creating it: the same candidates and the
 * same cumulative boundaries as createRollout. Membership itself is chosen at creation, so an
 * OKM that polls or is pinned in between can still change the figures.
 */
export async function previewRollout(db: Db, principal: Principal, body: CreateRolloutBody): Promise<RolloutPreview> {
  const percents = checkGroups(body.groups);
  const customer = await actingCustomer(db, principal, body.customer);
  if (!(await findRelease(db, body.kind, body.version))) throw badRequest(`version: no ${body.kind} release ${body.version} in the firmware catalog`);
  const { needing, upToDate } = await rolloutCandidates(db, customer?.id ?? null, body);
  const boundaries = groupBoundaries(needing.length, percents);
  return {
    eligible: needing.length,
    up_to_date: upToDate,
    groups: percents.map((percent, index) => ({ percent, okms: boundaries[index]! - (index === 0 ? 0 : boundaries[index - 1]!) })),
  };
}
