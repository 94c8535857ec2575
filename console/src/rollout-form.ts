/**
 * The rollout create form: what its controls hold, the create body made from them, and the
 * part of it the group-size preview needs. Text goes to the API as typed where the API
 * checks it, so that its message appears next to the field. Pure: unit-tested.
 */
import { parseGroupPercents } from './rollout-progress.ts';

export type FirmwareKind = 'kas' | 'batch_key' | 'wireless_key';

export interface RolloutForm {
  /** An admin's: the customer whose OKMs are updated; empty: every customer's. */
  customer: string;
  kind: FirmwareKind;
  version: string;
  /** "1, 10, 100": cumulative percents. */
  groups: string;
  filter_firmware_version: string;
  /** Serial numbers, one a line (or separated by commas or spaces). */
  filter_serial_numbers: string;
  success_threshold: string;
  error_threshold: string;
  update_timeout: string;
  auto_advance: boolean;
  approval_required: boolean;
  /** A datetime-local value, in the browser's zone; empty: started by hand. */
  start_at: string;
  window_from: string;
  window_to: string;
}

export const EMPTY_ROLLOUT_FORM: RolloutForm = {
  customer: '',
  kind: 'kas',
  version: '',
  groups: '1, 10, 100',
  filter_firmware_version: '',
  filter_serial_numbers: '',
  success_threshold: '95',
  error_threshold: '5',
  update_timeout: '1h',
  auto_advance: true,
  approval_required: false,
  start_at: '',
  window_from: '',
  window_to: '',
};

export interface PreviewBody {
  kind: FirmwareKind;
  version: string;
  customer?: string;
  filter?: { firmware_version?: string; serial_numbers?: string[] };
  groups: { percent: number }[];
}

export interface CreateBody extends PreviewBody {
  success_threshold: number;
  error_threshold: number;
  update_timeout: string;
  auto_advance: boolean;
  approval_required: boolean;
  start_at?: string;
  maintenance_window?: { from: string; to: string };
}

/** The form's problem the browser can tell before asking: the field and what is wrong. */
export interface FormProblem {
  field: string;
  message: string;
}

const words = (text: string) => text.split(/[\s,;]+/).filter((word) => word !== '');

/** A whole number as a number; anything else as typed, for the API to name. */
const wholeNumber = (text: string) => (/^-?\d+$/.test(text.trim()) ? Number(text.trim()) : (text.trim() as unknown as number));

/** What the preview sends (who, what, which OKMs, which groups); a problem when the groups cannot be read or no version is chosen. */
export function previewBody(form: RolloutForm): { body: PreviewBody } | { problem: FormProblem } {
  const groups = parseGroupPercents(form.groups);
  if ('error' in groups) return { problem: { field: 'groups', message: groups.error } };
  if (form.version === '') return { problem: { field: 'version', message: 'Choose a release of the catalog.' } };
  const filter: NonNullable<PreviewBody['filter']> = {};
  if (form.filter_firmware_version.trim() !== '') filter.firmware_version = form.filter_firmware_version.trim();
  const serials = words(form.filter_serial_numbers);
  if (serials.length > 0) filter.serial_numbers = [...new Set(serials)];
  return {
    body: {
      kind: form.kind,
      version: form.version,
      ...(form.customer.trim() === '' ? {} : { customer: form.customer.trim() }),
      ...(Object.keys(filter).length === 0 ? {} : { filter }),
      groups: groups.percents.map((percent) => ({ percent })),
    },
  };
}

/** The create body; `start_at` from the browser's local time to ISO 8601. */
export function createBody(form: RolloutForm): { body: CreateBody } | { problem: FormProblem } {
  const preview = previewBody(form);
  if ('problem' in preview) return preview;
  let startAt: string | undefined;
  if (form.start_at !== '') {
    const time = new Date(form.start_at);
    if (Number.isNaN(time.getTime())) return { problem: { field: 'start_at', message: 'Not a date and time.' } };
    startAt = time.toISOString();
  }
  const window = form.window_from !== '' || form.window_to !== '' ? { from: form.window_from, to: form.window_to } : undefined;
  return {
    body: {
      ...preview.body,
      success_threshold: wholeNumber(form.success_threshold),
      error_threshold: wholeNumber(form.error_threshold),
      update_timeout: form.update_timeout.trim(),
      auto_advance: form.auto_advance,
      approval_required: form.approval_required,
      ...(startAt === undefined ? {} : { start_at: startAt }),
      ...(window === undefined ? {} : { maintenance_window: window }),
    },
  };
}
