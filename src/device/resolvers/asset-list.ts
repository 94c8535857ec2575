import { listDiffers } from './list-digest.ts';
import type { Resolver } from './types.ts';

export const assetList: Resolver = (desired, reported) =>
  listDiffers(desired.assetList, reported.assetList)
    ? { assetList: desired.assetList.items, assetListDigest: desired.assetList.digest }
    : undefined;
