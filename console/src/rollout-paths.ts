import { href } from './paths.ts';

/** The page of a rollout. */
export const rolloutHref = (id: number) => href(`/rollouts/${id}`);

/** A rollout member's state, as the API's group counts and OKM list name it. */
export type RolloutOkmState = 'updated' | 'offered' | 'failed' | 'scheduled' | 'blocked' | 'silent';

/** The rollout's OKM list, of one state and one group (its index, from 0) when given: what a group count counts. */
export function rolloutOkmsHref(id: number, filter: { state?: RolloutOkmState; group?: number } = {}): string {
  const params = new URLSearchParams();
  if (filter.group !== undefined) params.set('group', String(filter.group));
  if (filter.state !== undefined) params.set('state', filter.state);
  const query = params.toString();
  return href(`/rollouts/${id}/okms${query === '' ? '' : `?${query}`}`);
}
