import type { Command } from 'commander';

export type Loader = () => Promise<{ register(program: Command): void }>;

/**
 * The top-level words, what each does, and the files that define its commands: a command
 * (serve) or a group's commands by their word (customer create). Only the file of the
 * command given is loaded, or a group's files for its help: each brings in its part of the
 * server (Fastify, the database drivers, X.509…), and loading all of them would cost every
 * command most of a second. Its own module, so that tests may list the commands without
 * running main.ts (which parses process.argv and exits as it loads).
 */
export const COMMANDS: Record<string, { description: string } & ({ load: Loader } | { commands: Record<string, Loader> })> = {
  serve: { description: 'apply migrations and start the HTTP server', load: () => import('./serve.ts') },
  dispatch: {
    description: 'deliver queued status events, without serving the API (any number may run on one PostgreSQL database)',
    load: () => import('./dispatch.ts'),
  },
  migrate: { description: 'apply pending database migrations and exit', load: () => import('./migrate.ts') },
  console: { description: 'print a sign-in URL of the operator console', load: () => import('./console.ts') },
  customer: {
    description: 'manage customers (tenants)',
    commands: { create: () => import('./customer-create.ts'), list: () => import('./customer-list.ts'), update: () => import('./customer-update.ts') },
  },
  token: {
    description: 'issue, list and revoke API tokens',
    commands: { issue: () => import('./token-issue.ts'), list: () => import('./token-list.ts'), revoke: () => import('./token-revoke.ts') },
  },
  role: {
    description: 'bind people and IdP groups to roles',
    commands: { bind: () => import('./role-bind.ts'), unbind: () => import('./role-unbind.ts'), list: () => import('./role-list.ts') },
  },
  session: { description: 'list and end the sessions of people signed in', commands: { list: () => import('./session-list.ts'), revoke: () => import('./session-revoke.ts') } },
  'signing-key': {
    description: 'manage the key that signs the deployment’s JWTs',
    commands: { list: () => import('./signing-key-list.ts'), rotate: () => import('./signing-key-rotate.ts'), retire: () => import('./signing-key-retire.ts') },
  },
  'master-key': {
    description: 'manage the key that encrypts private keys and secrets at rest',
    commands: { rotate: () => import('./master-key-rotate.ts'), retire: () => import('./master-key-retire.ts') },
  },
  apikey: {
    description: 'manage DLock API keys',
    commands: { create: () => import('./apikey-create.ts'), list: () => import('./apikey-list.ts'), revoke: () => import('./apikey-revoke.ts') },
  },
  cert: {
    description: 'manage customer intermediate certificates',
    commands: {
      create: () => import('./cert-create.ts'),
      list: () => import('./cert-list.ts'),
      import: () => import('./cert-import.ts'),
      'import-root': () => import('./cert-import-root.ts'),
      export: () => import('./cert-export.ts'),
      verify: () => import('./cert-verify.ts'),
    },
  },
  acl: { description: 'access control lists', commands: { 'remove-user': () => import('./acl-remove-user.ts') } },
  okm: {
    description: 'manage OKMs',
    commands: {
      pending: () => import('./okm-pending.ts'),
      accept: () => import('./okm-accept.ts'),
      token: () => import('./okm-token.ts'),
      'remove-subscriber-url': () => import('./okm-remove-subscriber-url.ts'),
    },
  },
  audit: { description: 'verify and export the audit trail of changes', commands: { verify: () => import('./audit-verify.ts'), export: () => import('./audit-export.ts') } },
  webhook: { description: 'status event webhooks', commands: { secret: () => import('./webhook-secret.ts') } },
  rollout: {
    description: 'staged firmware rollouts',
    commands: {
      create: () => import('./rollout-create.ts'),
      list: () => import('./rollout-list.ts'),
      show: () => import('./rollout-show.ts'),
      start: () => import('./rollout-start.ts'),
      pause: () => import('./rollout-pause.ts'),
      resume: () => import('./rollout-resume.ts'),
      advance: () => import('./rollout-advance.ts'),
      abort: () => import('./rollout-abort.ts'),
      approve: () => import('./rollout-approve.ts'),
    },
  },
  simulate: {
    description: 'run a fleet of virtual OKMs against a server (load tests, rollout rehearsals)',
    load: () => import('./simulate.ts'),
  },
};
