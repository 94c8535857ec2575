/**
 * The roles a role binding grants, in the server's order (src/auth/roles.ts, the table of
 * docs/operator-guide.md), with what each lets a person do, for the People & access page.
 */
export const ROLE_TEXT = {
  viewer: 'reads OKMs, ACLs and locks',
  'device-operator': 'reads, and changes OKMs',
  'acl-manager': 'reads, and creates, changes and deletes ACLs',
  'release-manager': 'reads, and adds firmware, creates, runs and approves rollouts',
  auditor: 'reads, and the audit trail',
  admin: 'everything, for every customer',
} as const;

export type RoleName = keyof typeof ROLE_TEXT;

export const ROLE_NAMES = Object.keys(ROLE_TEXT) as RoleName[];

export const BINDING_KIND_TEXT = {
  group: { label: 'IdP group', value: 'Group name', hint: 'Everyone whose ID token lists this group (the groups claim).' },
  email: { label: 'Email', value: 'Email address', hint: 'One person, by the email their provider gives.' },
  subject: { label: 'Subject', value: 'Subject (sub)', hint: 'One person, by the provider’s subject identifier.' },
} as const;
