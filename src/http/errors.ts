/** An error that maps to one HTTP response; the central error handler renders it. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorCode: string,
    message: string,
    readonly headers: Record<string, string> = {},
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
