import { href } from './paths.ts';

/** The page of a rollout. */
export const rolloutHref = (id: number) => href(`/rollouts/${id}`);
