/**
 * The roles a role binding grants (contract §17): named scope sets, the one table the docs
 * show (docs/operator-guide.md, "Single sign-on"). `admin` implies every scope, as the admin
 * scope of a token always has.
 */
export const ROLES = {
  viewer: ['okm:read', 'acl:read', 'lock:read'],
  'device-operator': ['okm:read', 'acl:read', 'lock:read', 'okm:write'],
  'acl-manager': ['okm:read', 'acl:read', 'lock:read', 'acl:create', 'acl:delete'],
  'release-manager': ['okm:read', 'acl:read', 'lock:read', 'firmware:write', 'rollout:write', 'rollout:approve'],
  auditor: ['okm:read', 'acl:read', 'lock:read', 'audit:read'],
  admin: ['admin'],
} as const satisfies Record<string, readonly string[]>;

export type Role = keyof typeof ROLES;

export const ROLE_NAMES = Object.keys(ROLES) as Role[];

export const isRole = (name: string): name is Role => Object.hasOwn(ROLES, name);

/**
 * Scopes that act on the whole fleet (the firmware catalog, rollouts across customers): a
 * binding for one customer does not grant them, whatever its role.
 */
export const FLEET_ONLY_SCOPES: ReadonlySet<string> = new Set(['firmware:write']);
