import type { Resolver } from './types.ts';

/** retailCfg_IR3ZonePlusAudit_e: the retail configuration that includes auditing. */
export const RETAIL_CONFIG_WITH_AUDIT = 2;

export const retailConfig: Resolver = ({ auditingEnabled }, { retailCfg }) =>
  auditingEnabled && retailCfg !== RETAIL_CONFIG_WITH_AUDIT ? { retailCfg: RETAIL_CONFIG_WITH_AUDIT } : undefined;
