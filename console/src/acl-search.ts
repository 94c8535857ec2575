/**
 * The ACL list's search as it stands in the console's URL and goes to the API
 * (GET /api/v1/acl-summaries: user_id, lock, name_contains). Pure: unit-tested under Node.
 */

/** What an operator can search ACLs by, in the order the form offers it. */
export const ACL_SEARCH_FIELDS = [
  { key: 'name_contains', label: 'Name contains' },
  { key: 'user_id', label: 'User id' },
  { key: 'lock', label: 'Lock serial' },
] as const;

export type AclSearchField = (typeof ACL_SEARCH_FIELDS)[number]['key'];

export interface AclSearch {
  field: AclSearchField;
  text: string;
}

/** The API's bounds, so that the form refuses what the API would (with plainer words). */
const USER_ID = /^\d{1,9}$/;
const LOCK_SERIAL = /^[A-Za-z0-9._-]{1,64}$/;
const NAME_MAX_LENGTH = 100;

/** The search of a console URL's query (the first of the fields it holds), or null. */
export function searchFromQuery(query: Record<string, string | undefined>): AclSearch | null {
  for (const { key } of ACL_SEARCH_FIELDS) {
    const text = query[key];
    if (text !== undefined && text.trim() !== '') return { field: key, text: text.trim() };
  }
  return null;
}

/** "?customer=acme&lock=DOOR-1", "" when neither is set. */
export function queryFromSearch(customer: string | undefined, search: AclSearch | null): string {
  const params = new URLSearchParams();
  if (customer !== undefined && customer !== '') params.set('customer', customer);
  if (search !== null) params.set(search.field, search.text);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** Why the form will not send this search, in plain words; null when it may. */
export function searchProblem(search: AclSearch): string | null {
  if (search.text === '') return 'Enter what to search for.';
  switch (search.field) {
    case 'user_id':
      return USER_ID.test(search.text) ? null : 'A user id is a whole number from 0 to 999 999 999.';
    case 'lock':
      return LOCK_SERIAL.test(search.text) ? null : 'A lock serial number is 1 to 64 letters, digits, dots, underscores or hyphens.';
    case 'name_contains':
      return search.text.length <= NAME_MAX_LENGTH ? null : `A name is at most ${NAME_MAX_LENGTH} characters.`;
  }
}

/** The API query parameters of a search. */
export function searchParameters(search: AclSearch | null): { user_id?: number; lock?: string; name_contains?: string } {
  if (search === null) return {};
  return search.field === 'user_id' ? { user_id: Number(search.text) } : { [search.field]: search.text };
}

/** What the list says when the search finds nothing. */
export function noMatchText(customer: string, search: AclSearch): string {
  switch (search.field) {
    case 'user_id':
      return `No ACL of ${customer} holds user ${search.text}.`;
    case 'lock':
      return `No ACL of ${customer} holds lock ${search.text}.`;
    case 'name_contains':
      return `No ACL of ${customer} has a name containing “${search.text}”.`;
  }
}

/** How many ACLs a search found, when the page shows them all; null when more pages follow. */
export function matchCountText(shown: number, isOnlyPage: boolean): string | null {
  if (!isOnlyPage) return null;
  return shown === 1 ? '1 ACL matches' : `${shown} ACLs match`;
}

/** How the console names an ACL: its name, else its id. */
export const aclLabel = (acl: { id: string; name?: string }) => acl.name ?? acl.id;
