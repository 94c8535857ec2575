import { Type } from 'typebox';

/**
 * The device's query parameters on the config poll (contract §0.4), documented only:
 * they are read leniently (src/device/reported.ts), so a missing, repeated or malformed value is
 * unknown and its resolver corrects it, never a 4xx (contract §4.2). None may carry a constraint.
 */
const unknownIfMalformed = 'A missing or malformed value counts as unknown (never a 4xx) and the resolver for it corrects it.';
const reported = (description: string, type: 'string' | 'integer' = 'string') =>
  Type.Optional(type === 'integer' ? Type.Integer({ description: `${description} ${unknownIfMalformed}` }) : Type.String({ description: `${description} ${unknownIfMalformed}` }));

export const PollQuery = Type.Object({
  kasFirmware: reported('Firmware version of the OKM. If a newer firmware is known, the reply is `kasFirmware` with the URL to fetch it.'),
  kasDateTime: reported('OKM time, epoch milliseconds, to synchronise with the service: more than 5 minutes off and the reply is the server time.', 'integer'),
  retailCfg: reported('Retail config type the OKM supports; 2 = retailCfg_IR3ZonePlusAudit_e (sent when auditing is enabled).', 'integer'),
  configUrl: reported('URL the OKM calls for this endpoint.'),
  auditUrl: reported('URL the OKM uses for audit; anything but the service\'s audit URL is corrected.'),
  assetList: reported('SHA-256 digest (hex) of the OKM\'s asset list; on mismatch the reply is the service\'s asset list.'),
  usersAssets: reported('SHA-256 digest (hex) of the OKM\'s user asset list; on mismatch the reply is the service\'s user asset list.'),
  batchKeyFirmware: reported('Batch key firmware version on the OKM; if a newer one is known, its URL is returned.'),
  wirelessKeyFirmware: reported('LoRa (wireless) key firmware version on the OKM; if a newer one is known, its URL is returned.'),
  keyCheckoutWindowTime: reported('Seconds a person has to check out a key.', 'integer'),
  keyCheckoutWindowContact: reported('`open` = normally open, `closed` = normally closed.'),
  installCode: reported('Installer code of the OKM, 5 to 20 digits (stored; another form is ignored); a tenant claims the OKM with it.'),
  cacheMode: reported('0 = unknown, 1 = disabled, 2 = enabled.', 'integer'),
  pollingInterval: reported('Seconds between config calls or idle communications: 5–3600, default 150.', 'integer'),
});

export const BootstrapResponse = Type.Object({ configUrl: Type.String({ description: 'the path of the config route (CONFIG_PATH)' }) });

/** A firmware the device should install: version, where to fetch it, and its SHA-256 (hex). */
export const FirmwareReference = Type.Object({ version: Type.String(), url: Type.String(), sha256: Type.String() });

/** The one correction of a poll (contract §4 resolvers 2–13): `{}` when the OKM is in step. */
export const PollReply = Type.Object(
  {
    message: Type.Optional(
      Type.Object({ id: Type.Integer(), type: Type.String(), payload: Type.Unknown() }, { description: 'a buffered message, oldest first' }),
    ),
    kasFirmware: Type.Optional(FirmwareReference),
    kasDateTime: Type.Optional(Type.Integer({ description: 'server time, epoch milliseconds' })),
    cacheMode: Type.Optional(Type.Integer({ description: '1 disabled, 2 enabled' })),
    keyCheckoutWindowTime: Type.Optional(Type.Integer()),
    keyCheckoutWindowContact: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('closed')])),
    retailCfg: Type.Optional(Type.Integer()),
    assetList: Type.Optional(Type.Array(Type.Unknown(), { description: 'the asset list as configured (or the linked ACL\'s locks)' })),
    assetListDigest: Type.Optional(Type.String()),
    usersAssets: Type.Optional(Type.Array(Type.Unknown())),
    usersAssetsDigest: Type.Optional(Type.String()),
    auditUrl: Type.Optional(Type.String()),
    pollingInterval: Type.Optional(Type.Integer()),
    batchKeyFirmware: Type.Optional(FirmwareReference),
    wirelessKeyFirmware: Type.Optional(FirmwareReference),
  },
  { description: 'at most one correction per poll; `{}` when nothing differs' },
);

export const AuditRecords = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Array(Type.Object({}, { additionalProperties: true }))], {
  description: 'one audit record (a JSON object) or an array of them, stored as sent; at most 1 MiB',
});

export const AuditReceipt = Type.Object({ count: Type.Integer({ description: 'records stored' }) });
