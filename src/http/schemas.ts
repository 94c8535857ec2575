import { Type, type TSchema } from 'typebox';

/**
 * Text without control characters (C0, DEL, C1) or unpaired UTF-16 surrogates: PostgreSQL
 * text cannot hold U+0000 nor store a lone surrogate, and none belongs in a name or label.
 */
export const FREE_TEXT_PATTERN = '^[^\\p{Cc}\\p{Cs}]*$';

const FREE_TEXT = new RegExp(FREE_TEXT_PATTERN, 'u');
const SPACE = 0x20;
const TILDE = 0x7e;

/**
 * Whether `value` matches FREE_TEXT_PATTERN. Printable ASCII, what a device reports, is
 * decided by a loop over its characters: a test of the pattern cost about 400 instructions,
 * three a poll.
 */
export function isFreeText(value: string): boolean {
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code < SPACE || code > TILDE) return FREE_TEXT.test(value);
  }
  return true;
}

export interface FreeTextOptions {
  minLength?: number;
  maxLength: number;
  description?: string;
}

/** A free-text string field (query or body); every such field of the API uses this. */
export const FreeText = (options: FreeTextOptions) => Type.String({ ...options, pattern: FREE_TEXT_PATTERN });

export const IsoTime = Type.String({ format: 'date-time' });

// The non-null branch comes first so that a validation error names what the field expects.
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const ErrorResponse = Type.Object({ error_code: Type.String(), error_msg: Type.String() });

/** The error body of the DLock resource (contract §7.6): what the error handler renders on routes with `errorShape: 'dlock'`. */
export const DlockError = Type.Object({ status: Type.Integer(), msg: Type.String() });

export const MESSAGES = {
  created: 'Resource created successfully',
  updated: 'Resource updated successfully',
  fetched: 'Resource fetched successfully',
} as const;

export const MAX_RESULTS_PER_PAGE = 100;
export const DEFAULT_RESULTS_PER_PAGE = 30;

/** The `page` and `results_per_page` query values of a paginated list. */
export const paginationQueryProperties = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  results_per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RESULTS_PER_PAGE, default: DEFAULT_RESULTS_PER_PAGE })),
};

export interface PaginationQuery {
  page?: number;
  results_per_page?: number;
}

export const pageOf = (query: PaginationQuery) => query.page ?? 1;
export const perPageOf = (query: PaginationQuery) => query.results_per_page ?? DEFAULT_RESULTS_PER_PAGE;

/** `pagination` of a list response, with the string-typed counts of contract §8.3. */
export const Pagination = Type.Object({
  page: Type.Integer(),
  results_per_page: Type.String(),
  total_results: Type.String(),
});

export const resourceResponse = <T extends TSchema>(data: T) => Type.Object({ message: Type.String(), data });
export const pageResponse = <T extends TSchema>(item: T) =>
  Type.Object({ message: Type.String(), pagination: Pagination, data: Type.Array(item) });

/** The body of a paginated list response. */
export function paginated<T>(query: PaginationQuery, items: T[], total: number) {
  return {
    message: MESSAGES.fetched,
    pagination: { page: pageOf(query), results_per_page: String(perPageOf(query)), total_results: String(total) },
    data: items,
  };
}
