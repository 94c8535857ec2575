/**
 * The most keyfleet reads of any answer from an outside server (contract §16): a status
 * subscriber, a fleet-event endpoint, an identity provider's JWKS. Past it the connection is
 * dropped. Sockets are read in pieces of up to 64 KiB, so the piece that crosses the bound may
 * come off the connection too; it is not used.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

export class AnswerTooLargeError extends Error {
  constructor(url: string, limit: number) {
    super(`the answer of ${url} is longer than ${limit} bytes: the connection was dropped`);
    this.name = 'AnswerTooLargeError';
  }
}

/**
 * fetch, with the answer's body read into memory up to `limit` bytes: a longer body cancels
 * the stream (which closes the connection) and rejects. The request's signal covers the body
 * as well as the headers.
 */
export async function fetchAtMost(url: string | URL, init: RequestInit, limit = MAX_ANSWER_BYTES): Promise<Response> {
  const response = await fetch(url, init);
  const chunks: Uint8Array[] = [];
  let length = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      length += value.byteLength;
      if (length > limit) {
        await reader.cancel().catch(() => {});
        throw new AnswerTooLargeError(String(url), limit);
      }
      chunks.push(value);
    }
  }
  return new Response(response.body && Buffer.concat(chunks), { status: response.status, statusText: response.statusText, headers: response.headers });
}
