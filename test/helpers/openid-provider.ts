/** The tests' OpenID Provider is the demo's (npm run demo:sso): one real provider, used both ways. */
export { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OpenIdProvider, type ProviderPerson } from '../../demo/openid-provider.ts';
