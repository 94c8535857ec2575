/** Every console URL begins with this; the server answers index.html for any path below it. */
export const BASE = '/console';

/** The console URL of a page path ("/okms" → "/console/okms"). */
export const href = (path: string) => `${BASE}${path}`;

/** The detail page of an OKM. */
export const okmHref = (serial: string) => href(`/okms/${encodeURIComponent(serial)}`);

/** The page of an ACL ("new": the form that creates one), for an operator with the ACL's customer. */
export const aclHref = (id: string, customer?: string) =>
  href(`/acls/${encodeURIComponent(id)}${customer === undefined ? '' : `?customer=${encodeURIComponent(customer)}`}`);

/** The page of an enrolled DLock: what it was enrolled with, and its history. */
export const lockHref = (serial: string) => href(`/locks/${encodeURIComponent(serial)}`);
