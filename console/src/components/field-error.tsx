import { ApiError } from '../api/client.ts';
import { isAbout } from '../api/error-message.ts';

/** The id of a control's error message, for its aria-describedby. */
export const errorId = (control: string) => `error-${control.replace(/[^A-Za-z0-9_-]/g, '-')}`;

/** The API's message when it is about `control` (or one of its members), else undefined. */
export function errorFor(error: unknown, control: string): string | undefined {
  return error instanceof ApiError && isAbout(error.field, control) ? error.message : undefined;
}

/** Props that mark a control invalid and point it at its message. */
export const invalidProps = (error: unknown, control: string) =>
  errorFor(error, control) === undefined ? {} : { 'aria-invalid': true, 'aria-describedby': errorId(control) };

/** The API's message next to the field it names. */
export function FieldError({ error, control }: { error: unknown; control: string }) {
  const message = errorFor(error, control);
  if (message === undefined) return null;
  return (
    <p class="field-error" id={errorId(control)} role="alert">
      {message}
    </p>
  );
}
