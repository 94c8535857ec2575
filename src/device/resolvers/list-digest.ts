import type { ConfiguredList } from './types.ts';

/**
 * A configured list (an empty one too) differs unless the device reports its digest, in any
 * letter case. The stored digest is lower case, as devices in step mostly send it: an equal
 * digest is taken as it is, and only another is lowered to compare (lowering two 64-character
 * digests cost about a tenth of the resolvers' work on every poll).
 */
export const listDiffers = (list: ConfiguredList | null, reportedDigest: string | undefined): list is ConfiguredList =>
  list !== null && reportedDigest !== list.digest && reportedDigest?.toLowerCase() !== list.digest;
