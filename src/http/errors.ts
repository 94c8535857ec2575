/** An error that maps to one HTTP response; the central error handler renders it. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorCode: string,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Members the body has beyond error_code and error_msg: name → its value as JSON text. */
    readonly bodyMembers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (message: string) => new HttpError(400, 'BAD_REQUEST', message);
export const notFound = (message: string) => new HttpError(404, 'NOT_FOUND', message);
export const conflict = (message: string) => new HttpError(409, 'CONFLICT', message);
export const forbidden = (message = 'Missing required scopes') => new HttpError(403, 'UNAUTHORIZED_ACCESS', message);
export const unauthorized = (message: string) =>
  new HttpError(401, 'UNAUTHORIZED', message, { 'www-authenticate': 'Bearer error="invalid_token"' });
export const methodNotAllowed = (message: string, allow: string) => new HttpError(405, 'METHOD_NOT_ALLOWED', message, { allow });
export const unsupportedMediaType = (message: string) => new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', message);

/**
 * The server cannot answer for now, for a reason outside the request that may pass (here, or
 * on another server): a 503 with Retry-After, wherever it sits among an error's causes. The
 * layer that knows the reason subclasses it; many requests meet such a reason at once, so it
 * is logged as one warning per interval for the process, with the count it stands for.
 */
export abstract class UnavailableError extends Error {
  /** The answer's error_code. */
  abstract readonly errorCode: string;
  /** The answer's error_msg: what a client may know; the error's own message goes to the log. */
  abstract readonly clientMessage: string;
  /** The warning logged, telling the operator what to do. */
  abstract readonly warning: string;
  /** The fields logged with the warning. */
  abstract logFields(): Record<string, unknown>;
}
