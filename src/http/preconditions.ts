import { createHash } from 'node:crypto';
import { Type, type TSchema } from 'typebox';
import { badRequest, HttpError } from './errors.ts';
import { Nullable } from './schemas.ts';

/**
 * Conditional writes (RFC 9110 §13): editable resources answer their reads with a strong ETag,
 * and their writes honour If-Match. The ETag is a digest of the resource's version text: what
 * its service reads of it, under the row lock when a write checks it (docs/adr/0100).
 */

/** error_code of a 412. */
export const PRECONDITION_FAILED = 'PRECONDITION_FAILED';

/** The strong ETag of a resource whose version text is `versionText`, given whole or in parts (162 bits of its SHA-256). */
export function strongEtag(...versionText: string[]): string {
  const digest = createHash('sha256');
  // In parts, so that a large version (an ACL's JSON) is hashed as it is rather than joined first.
  for (const part of versionText) digest.update(part);
  return `"${digest.digest('base64url').slice(0, 27)}"`;
}

/** An If-Match field value, parsed: `*`, or the strong entity-tags it lists (weak ones never match a write, RFC 9110 §13.1.1). */
export type IfMatch = { any: true } | { any: false; strong: readonly string[] };

/**
 * One list element of If-Match (RFC 9110 §8.8.3: entity-tag = [ W/ ] DQUOTE *etagc DQUOTE), with
 * the optional whitespace and the comma around it; empty elements are allowed (§5.6.1). A
 * scanner, not a split on commas: etagc includes the comma.
 */
const ELEMENT = /[ \t]*(?:(W\/)?("[\x21\x23-\x7e\x80-\xff]*"))?[ \t]*(?:,|$)/y;

/**
 * The If-Match request header, parsed; undefined when the request has none (the write is
 * unconditional, as every write was before). A value that is neither `*` nor a list of
 * entity-tags is a 400: the client meant a condition, and guessing one could overwrite.
 */
export function parseIfMatch(value: string | undefined): IfMatch | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '*') return { any: true };
  const strong: string[] = [];
  let tags = 0;
  for (let position = 0; position < value.length; ) {
    ELEMENT.lastIndex = position;
    const element = ELEMENT.exec(value);
    if (!element || element[0].length === 0) throw badRequest('If-Match: must be * or a list of entity-tags such as "abc" (RFC 9110)');
    if (element[2] !== undefined) {
      tags++;
      if (element[1] === undefined) strong.push(element[2]);
    }
    position = ELEMENT.lastIndex;
  }
  if (tags === 0) throw badRequest('If-Match: must be * or a list of entity-tags such as "abc" (RFC 9110)');
  return { any: false, strong };
}

/** The resource as a 412 gives it: its ETag and its representation, as the JSON text its read answers with. */
export interface CurrentVersion {
  etag: string;
  json: string;
}

/** A 412: the body names the current version (`current`, null when the resource does not exist) and the ETag header carries its ETag. */
export class PreconditionFailedError extends HttpError {
  constructor(current: CurrentVersion | null) {
    super(
      412,
      PRECONDITION_FAILED,
      current === null ? 'If-Match: the resource does not exist' : 'If-Match: the resource has changed since that version; current is the version it has now, and ETag its tag',
      current === null ? {} : { etag: current.etag },
      { current: current === null ? 'null' : current.json },
    );
  }
}

/**
 * Evaluates If-Match against the resource as it is (RFC 9110 §13.1.1, strong comparison);
 * throws the 412 when it is false. Callers hold the resource's row lock, so that no other
 * write comes between this check and their own. `current` is called only to build the 412.
 */
export function checkIfMatch(ifMatch: IfMatch | undefined, etag: string | null, current: () => string): void {
  if (ifMatchHolds(ifMatch, etag)) return;
  throw new PreconditionFailedError(etag === null ? null : { etag, json: current() });
}

/** Whether If-Match holds for a resource of this ETag (null: there is none); true without If-Match. */
export function ifMatchHolds(ifMatch: IfMatch | undefined, etag: string | null): boolean {
  return ifMatch === undefined || (etag !== null && (ifMatch.any || ifMatch.strong.includes(etag)));
}

/** The request header of the routes that honour If-Match. */
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      maxLength: 2048,
      description:
        'RFC 9110 precondition: the ETag of the version this write is based on (from a read or an earlier write), or `*`. When it is not the current version the answer is 412 with the current version; weak tags never match. Without it the write is unconditional.',
    }),
  ),
});

/** The body of a 412 of a resource whose representation is `view`. */
export const preconditionFailedResponse = (view: TSchema) =>
  Type.Object(
    { error_code: Type.Literal(PRECONDITION_FAILED), error_msg: Type.String(), current: Nullable(view) },
    { description: 'If-Match named another version than the current one: `current` is the resource as it now is (null: it does not exist), and the ETag header its tag' },
  );
