import { listDiffers } from './list-digest.ts';
import type { Resolver } from './types.ts';

export const usersAssets: Resolver = (desired, reported) =>
  listDiffers(desired.usersAssets, reported.usersAssets)
    ? { usersAssets: desired.usersAssets.items, usersAssetsDigest: desired.usersAssets.digest }
    : undefined;
