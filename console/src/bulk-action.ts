import type { OkmBulkAction } from './api/client.ts';

/**
 * The OKM list's bulk action form, pure: what the operator typed becomes the API's action (or
 * the reason it is not one yet), and an action reads as words in the preview and the confirmation.
 */

export type ActionKind = 'setting' | 'pin' | 'assign' | 'message' | 'unsubscribe';

export const SETTINGS = [
  { key: 'polling_interval', label: 'Polling interval (seconds, 5–3600)' },
  { key: 'cache_mode', label: 'Cache mode (1 disabled, 2 enabled)' },
  { key: 'auditing_enabled', label: 'Auditing (on / off)' },
] as const;
export type SettingKey = (typeof SETTINGS)[number]['key'];

export const FIRMWARE_KINDS = [
  { key: 'kas', label: 'KAS' },
  { key: 'batch_key', label: 'Batch key' },
  { key: 'wireless_key', label: 'Wireless key' },
] as const;

/** What the form holds, as the operator typed it. */
export interface Draft {
  kind: ActionKind;
  setting: SettingKey;
  value: string;
  firmwareKind: (typeof FIRMWARE_KINDS)[number]['key'];
  version: string;
  customer: string;
  messageType: string;
  payload: string;
  url: string;
}

/** The action the draft describes, or the reason it is not one yet (in plain words, before the API is asked). */
export function actionOfDraft(draft: Draft): OkmBulkAction | string {
  const blankIsNull = (text: string) => (text.trim() === '' ? null : text.trim());
  switch (draft.kind) {
    case 'setting': {
      const text = draft.value.trim().toLowerCase();
      if (draft.setting === 'auditing_enabled') {
        if (!['on', 'off', 'true', 'false'].includes(text)) return 'Auditing: type on or off.';
        return { type: 'configure', settings: { auditing_enabled: text === 'on' || text === 'true' } };
      }
      if (text === '') return { type: 'configure', settings: { [draft.setting]: null } };
      const number = Number(text);
      if (!Number.isInteger(number)) return 'Type a whole number, or leave it empty to unset the setting.';
      return { type: 'configure', settings: { [draft.setting]: number } } as OkmBulkAction;
    }
    case 'pin':
      return { type: 'configure', settings: { firmware: { [draft.firmwareKind]: blankIsNull(draft.version) } } };
    case 'assign':
      return { type: 'assign', customer: blankIsNull(draft.customer) };
    case 'message': {
      if (draft.messageType.trim() === '') return 'Name the message type.';
      if (draft.payload.trim() === '') return { type: 'queue_message', message: { type: draft.messageType.trim() } };
      try {
        return { type: 'queue_message', message: { type: draft.messageType.trim(), payload: JSON.parse(draft.payload) as unknown } };
      } catch {
        return 'The payload is not JSON.';
      }
    }
    case 'unsubscribe':
      return draft.url.trim() === '' ? 'Type the subscriber URL to remove.' : { type: 'remove_subscriber_url', url: draft.url.trim() };
  }
}

/** The action in words, for the confirmation: "set polling_interval to 300". */
export function actionWords(action: OkmBulkAction): string {
  switch (action.type) {
    case 'configure': {
      const [name, value] = Object.entries(action.settings)[0] ?? ['', null];
      if (name === 'firmware') {
        const [kind, version] = Object.entries(value as Record<string, string | null>)[0] ?? ['', null];
        return version === null ? `remove the ${kind} firmware pin` : `pin ${kind} firmware ${version}`;
      }
      return value === null ? `unset ${name} (fleet default)` : `set ${name} to ${String(value)}`;
    }
    case 'assign':
      return action.customer === null ? 'take them from their customer (none)' : `assign them to ${action.customer}`;
    case 'queue_message':
      return `queue a "${action.message.type}" message`;
    case 'remove_subscriber_url':
      return `remove the subscriber ${action.url}`;
  }
}
