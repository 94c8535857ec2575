/**
 * The API's 400 messages name the offending field first: "polling_interval: must be <= 3600",
 * "key_checkout_window.time: must be >= 0", "body.users[3].permissions: …". This splits such a
 * message into the field (as the form names it) and the sentence shown next to it.
 */
export interface FieldMessage {
  /** Dotted path of the field without the request part ("body.", "querystring."); null: no field named. */
  field: string | null;
  message: string;
}

const FIELD_FIRST = /^([A-Za-z_][\w-]*(?:\[\d+\]|\.[A-Za-z_][\w-]*)*): (.+)$/s;
const REQUEST_PARTS = new Set(['body', 'querystring', 'params', 'headers']);

export function fieldMessage(errorMessage: string): FieldMessage {
  const match = FIELD_FIRST.exec(errorMessage);
  if (!match) return { field: null, message: errorMessage };
  const [, path, message] = match as unknown as [string, string, string];
  const segments = path.split('.');
  if (segments.length > 1 && REQUEST_PARTS.has(segments[0]!)) segments.shift();
  const field = segments.join('.');
  return { field: REQUEST_PARTS.has(field) ? null : field, message };
}

/** Whether an error about `field` belongs to the form control for `control` (itself or one of its members). */
export function isAbout(field: string | null, control: string): boolean {
  if (field === null) return false;
  return field === control || field.startsWith(`${control}.`) || field.startsWith(`${control}[`);
}
