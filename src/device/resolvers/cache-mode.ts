import type { Resolver } from './types.ts';

const DISABLED = 1;

/** With no configured mode ("not supported") the device is told to disable caching. */
export const cacheMode: Resolver = (desired, reported) => {
  const wanted = desired.cacheMode ?? DISABLED;
  return reported.cacheMode === wanted ? undefined : { cacheMode: wanted };
};
