import * as client from 'openid-client';
import type { OidcSettings } from '../config/settings.ts';
import { fetchAtMost } from '../shared/outside-answers.ts';

/**
 * keyfleet as an OpenID Connect relying party, through openid-client (authorization code
 * flow with PKCE, `state` and `nonce`; the ID token's signature, `iss`, `aud`, `exp` and
 * `nonce` verified by the library). The provider's metadata is discovered at the first use
 * and again after a failed discovery, so that keyfleet starts while the provider is down.
 */

/** Every call to the provider gives up after this. */
const PROVIDER_TIMEOUT_SECONDS = 5;

/** What the provider says of the person at sign-in or refresh. */
export interface ProviderIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
  groups: string[];
  /** The refresh token to read the groups again later, if the provider gave one. */
  refreshToken: string | undefined;
}

/** The provider could not be reached or failed (a 5xx, a timeout): try again later. */
export class ProviderUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the identity provider is unavailable: ${describe(cause)}`, { cause });
    this.name = 'ProviderUnavailableError';
  }
}

/** The provider or the library refused the sign-in (a wrong state, a replayed code, a bad ID token…). */
export class SignInRefusedError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'SignInRefusedError';
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

/** A failure to talk to the provider, as opposed to its refusal. */
function isUnavailable(error: unknown): boolean {
  if (error instanceof client.ResponseBodyError) return error.status >= 500 || error.status === 429;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return true;
  // An answer that is no OAuth answer, with a server error's status (a proxy's 502 page, a 503 for maintenance).
  if (error instanceof Error && error.cause instanceof Response) return error.cause.status >= 500 || error.cause.status === 429;
  // fetch's network failures: refused, reset, unknown host.
  return error instanceof TypeError;
}

function classify(error: unknown): Error {
  if (error instanceof ProviderUnavailableError || error instanceof SignInRefusedError) return error;
  if (isUnavailable(error)) return new ProviderUnavailableError(error);
  if (error instanceof client.AuthorizationResponseError) return new SignInRefusedError(`the provider refused the sign-in: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`, error);
  if (error instanceof client.ResponseBodyError) return new SignInRefusedError(`the provider refused the code: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`, error);
  return new SignInRefusedError(`the provider's answer failed a check: ${describe(error)}`, error);
}

function groupsFrom(claims: Record<string, unknown>, claim: string): string[] {
  const value = claims[claim];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((each): each is string => typeof each === 'string') : [];
}

export interface OidcClient {
  /** The URL to send the browser to, with the PKCE challenge of `codeVerifier`. */
  authorizationUrl(checks: { state: string; nonce: string; codeVerifier: string }): Promise<URL>;
  /** The person of a callback URL, once the code is exchanged and the ID token verified. */
  signIn(callbackUrl: URL, checks: { state: string; nonce: string; codeVerifier: string }): Promise<ProviderIdentity>;
  /** The person as the provider sees them now, through the refresh token. */
  refresh(refreshToken: string): Promise<ProviderIdentity>;
  /** The provider's sign-out URL (RP-initiated logout), or undefined when it has none. */
  endSessionUrl(postLogoutRedirectUri: string): Promise<URL | undefined>;
}

/** `clockToleranceSeconds`: the leeway for the ID token's times, as for the deployment's own tokens (JWT_CLOCK_TOLERANCE_SECONDS). */
export function createOidcClient(settings: OidcSettings, clockToleranceSeconds: number): OidcClient {
  let discovered: Promise<client.Configuration> | undefined;
  const configuration = () =>
    (discovered ??= (async () => {
      const authentication = settings.clientSecret === undefined ? client.None() : settings.tokenEndpointAuth === 'client_secret_post' ? client.ClientSecretPost(settings.clientSecret) : client.ClientSecretBasic(settings.clientSecret);
      const config = await client.discovery(new URL(settings.issuer), settings.clientId, { redirect_uris: [settings.redirectUri], [client.clockTolerance]: clockToleranceSeconds }, authentication, {
        timeout: PROVIDER_TIMEOUT_SECONDS,
        // Everything from outside is bounded: at most 64 KiB of any answer of the provider (contract §16).
        [client.customFetch]: (url: string, options: client.CustomFetchOptions) => fetchAtMost(url, options as RequestInit),
        ...(settings.allowHttp ? { execute: [client.allowInsecureRequests] } : {}),
      });
      config.timeout = PROVIDER_TIMEOUT_SECONDS;
      return config;
    })().catch((error: unknown) => {
      discovered = undefined;
      throw classify(error);
    }));

  const identityOf = (tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers, previousRefreshToken?: string): ProviderIdentity => {
    const claims = tokens.claims();
    if (!claims) throw new SignInRefusedError('the provider sent no ID token');
    return {
      issuer: claims.iss,
      subject: claims.sub,
      // An email the provider has not verified names nobody: a person who may set their own would take the bindings of another's.
      email: typeof claims.email === 'string' && claims.email_verified === true ? claims.email : null,
      name: typeof claims.name === 'string' ? claims.name : typeof claims.preferred_username === 'string' ? claims.preferred_username : null,
      groups: groupsFrom(claims, settings.groupsClaim),
      refreshToken: tokens.refresh_token ?? previousRefreshToken,
    };
  };

  return {
    async authorizationUrl({ state, nonce, codeVerifier }) {
      const config = await configuration();
      return client.buildAuthorizationUrl(config, {
        redirect_uri: settings.redirectUri,
        scope: settings.scopes,
        state,
        nonce,
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        // Some providers give a refresh token only when asked to show the consent for it.
        ...(settings.scopes.split(' ').includes('offline_access') ? { prompt: 'consent' } : {}),
      });
    },
    async signIn(callbackUrl, { state, nonce, codeVerifier }) {
      const config = await configuration();
      try {
        return identityOf(await client.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true }));
      } catch (error) {
        throw classify(error);
      }
    },
    async refresh(refreshToken) {
      // A provider whose metadata cannot be read now has not refused anyone: the session waits.
      const config = await configuration().catch((error: unknown) => {
        throw error instanceof ProviderUnavailableError ? error : new ProviderUnavailableError(error);
      });
      try {
        return identityOf(await client.refreshTokenGrant(config, refreshToken), refreshToken);
      } catch (error) {
        throw classify(error);
      }
    },
    async endSessionUrl(postLogoutRedirectUri) {
      const config = await configuration();
      if (!config.serverMetadata().end_session_endpoint) return undefined;
      return client.buildEndSessionUrl(config, { client_id: settings.clientId, post_logout_redirect_uri: postLogoutRedirectUri });
    },
  };
}
