import { actingCustomer, type Principal } from '../auth/guard.ts';
import type { Db } from '../db/database.ts';
import { findRelease } from '../firmware/repository.ts';
import { compareFirmwareVersions, parseFirmwareVersion } from '../firmware/version.ts';
import { badRequest } from '../http/errors.ts';
import { groupBoundaries } from './model.ts';
import { candidateOkms } from './repository.ts';
import type { CreateRolloutBody } from './schemas.ts';

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
  const percents = body.groups.map((group) => group.percent);
  percents.forEach((percent, index) => {
    if (index > 0 && percent <= percents[index - 1]!) {
      throw badRequest(`groups[${index}].percent: must be greater than the previous group's (${percents[index - 1]}): percents are cumulative`);
    }
  });
  const customer = await actingCustomer(db, principal, body.customer);
  if (!(await findRelease(db, body.kind, body.version))) throw badRequest(`version: no ${body.kind} release ${body.version} in the firmware catalog`);
  const target = parseFirmwareVersion(body.version)!;
  const candidates = await candidateOkms(db, {
    customerId: customer?.id ?? null,
    kind: body.kind,
    firmwareVersion: body.filter?.firmware_version,
    serialNumbers: body.filter?.serial_numbers,
  });
  const eligible = candidates.filter((okm) => {
    const reported = parseFirmwareVersion(okm.reported_version ?? undefined);
    return !reported || compareFirmwareVersions(reported, target) < 0;
  }).length;
  const boundaries = groupBoundaries(eligible, percents);
  return {
    eligible,
    up_to_date: candidates.length - eligible,
    groups: percents.map((percent, index) => ({ percent, okms: boundaries[index]! - (index === 0 ? 0 : boundaries[index - 1]!) })),
  };
}
