import type { ConfiguredList } from './types.ts';

/**
 * A configured list (an empty one too) differs unless the device reports its digest, in any
 * letter case. The stored digest is lower case, as devices in step mostly send it: an equal
 * digest is taken as it is, and only another is lowered to compare (lowering the two 64-character
 * digests of every poll cost about 1.5 k instructions).
 */
export const listDiffers = (list: ConfiguredList | null, reportedDigest: string | undefined): list is ConfiguredList =>
  list !== null && reportedDigest !== list.digest && reportedDigest?.toLowerCase() !== list.digest;
