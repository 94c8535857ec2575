import { buildTestApp, type TestApp } from './app.ts';
import type { DatabaseKind } from './databases.ts';
import { OpenIdProvider, type ProviderPerson } from './openid-provider.ts';
import { freePort } from './server-process.ts';

export interface SingleSignOnWorld {
  t: TestApp;
  idp: OpenIdProvider;
  /** keyfleet's base URL on its real port (the provider sends browsers back to it). */
  base: string;
  close(): Promise<void>;
}

/**
 * keyfleet on a real port of 127.0.0.1, signing people in through a real OpenID Provider of its
 * own (each person copied, so that a test may change their groups); `env` adds or overrides
 * settings (given the provider, when a function), `scopes` the OIDC_SCOPES.
 */
export async function appWithSingleSignOn(
  kind: DatabaseKind,
  people: readonly ProviderPerson[],
  { env = {}, scopes, idTokenTtlSeconds }: { env?: Record<string, string> | ((idp: OpenIdProvider) => Record<string, string>); scopes?: string; idTokenTtlSeconds?: number } = {},
): Promise<SingleSignOnWorld> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const idp = await OpenIdProvider.start(`${base}/auth/oidc/callback`, `${base}/console/`, people.map((person) => ({ ...person, groups: [...person.groups] })), idTokenTtlSeconds === undefined ? {} : { idTokenTtlSeconds });
  const t = await buildTestApp(kind, { ...idp.keyfleetSettings(base, scopes), ...(typeof env === 'function' ? env(idp) : env) });
  await t.app.listen({ port, host: '127.0.0.1' });
  return {
    t,
    idp,
    base,
    async close() {
      await t.close();
      await idp.close();
    },
  };
}
