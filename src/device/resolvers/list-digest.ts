import type { ConfiguredList } from './types.ts';

/** A configured list (an empty one too) differs unless the device reports its digest, in any letter case. */
export const listDiffers = (list: ConfiguredList | null, reportedDigest: string | undefined): list is ConfiguredList =>
  list !== null && reportedDigest?.toLowerCase() !== list.digest;
