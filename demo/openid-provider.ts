import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';

/** A person the provider knows: their subject, and the claims it puts in their ID tokens. */
export interface ProviderPerson {
  sub: string;
  email: string;
  name: string;
  groups: string[];
  /** Whether the provider vouches for the email (the email_verified claim); true unless said otherwise. */
  emailVerified?: boolean;
}

export const OIDC_CLIENT_ID = 'keyfleet-demo';
export const OIDC_CLIENT_SECRET = 'keyfleet-demo-secret';

/**
 * A real OpenID Provider (panva's oidc-provider, certified) on 127.0.0.1, for the tests and for
 * `npm run demo:sso`: the authorization code flow with PKCE, refresh tokens, RP-initiated
 * logout, the groups claim in ID tokens. Its sign-in page is a one-field form (who signs in); the consent is given at once.
 * `people` may change while it runs (a person's groups, a person removed).
 */
export class OpenIdProvider {
  readonly people = new Map<string, ProviderPerson>();
  /** Set to make the provider answer every request 503 (down for maintenance). */
  down = false;
  /** Sends the token endpoint's answers this long after it makes them (an ID token that expires on the way). */
  tokenDelayMs = 0;
  /** Requests the token endpoint has had (code exchanges and refreshes). */
  tokenRequests = 0;
  #server!: http.Server;
  #provider!: Provider;
  issuer = '';

  static async start(redirectUri: string, postLogoutRedirectUri: string, people: ProviderPerson[] = [], { idTokenTtlSeconds = 600, port = 0 } = {}): Promise<OpenIdProvider> {
    const idp = new OpenIdProvider();
    for (const person of people) idp.people.set(person.sub, person);
    idp.#server = http.createServer();
    await new Promise<void>((resolve) => idp.#server.listen(port, '127.0.0.1', resolve));
    idp.issuer = `http://127.0.0.1:${(idp.#server.address() as AddressInfo).port}`;
    // A signing key of its own, made now: the provider's built-in key is for quick starts only, and says so on every start.
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const signingKey = { ...(await exportJWK(privateKey)), kid: 'demo', alg: 'RS256', use: 'sig' };
    idp.#provider = new Provider(idp.issuer, { ...idp.#configuration(redirectUri, postLogoutRedirectUri, idTokenTtlSeconds), jwks: { keys: [signingKey] } } as Configuration);
    const oidcHandler = idp.#provider.callback();
    idp.#server.on('request', (request, response) => {
      if (idp.down) return void response.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance');
      if (request.url?.startsWith('/token')) idp.tokenRequests++;
      if (request.url?.startsWith('/token') && idp.tokenDelayMs > 0) {
        // The token is made now and sent late, as over a slow network.
        const end = response.end.bind(response) as (...args: unknown[]) => http.ServerResponse;
        response.end = ((...args: unknown[]) => void setTimeout(() => end(...args), idp.tokenDelayMs)) as unknown as typeof response.end;
      }
      void idp.#interaction(request, response).then((handled) => {
        if (!handled) return oidcHandler(request, response);
      });
    });
    return idp;
  }

  /** The settings of a keyfleet at `base` that signs people in through this provider. */
  keyfleetSettings(base: string, scopes = 'openid email profile groups offline_access'): Record<string, string> {
    return { PUBLIC_BASE_URL: base, OIDC_ISSUER: this.issuer, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_ALLOW_HTTP: 'true', OIDC_SCOPES: scopes };
  }

  #configuration(redirectUri: string, postLogoutRedirectUri: string, idTokenTtlSeconds: number): Configuration {
    return {
      clients: [
        {
          client_id: OIDC_CLIENT_ID,
          client_secret: OIDC_CLIENT_SECRET,
          redirect_uris: [redirectUri],
          post_logout_redirect_uris: [postLogoutRedirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
      scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
      // The claims of the scopes asked for go into the ID token, as most providers put groups there.
      conformIdTokenClaims: false,
      cookies: { keys: ['keyfleet-demo-cookie-key'] },
      features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
      pkce: { required: () => true },
      ttl: { IdToken: idTokenTtlSeconds, AccessToken: 600, RefreshToken: 86_400, Interaction: 600, Session: 86_400, Grant: 86_400, AuthorizationCode: 60 },
      findAccount: (_context: KoaContextWithOIDC, sub: string) => {
        const person = this.people.get(sub);
        if (!person) return undefined;
        const { emailVerified = true, ...claims } = person;
        return { accountId: sub, claims: () => ({ ...claims, email_verified: emailVerified }) };
      },
      interactions: { url: (_context: KoaContextWithOIDC, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    } as Configuration;
  }

  /** The sign-in form and the consent, as the interaction URLs; false for every other request. */
  async #interaction(request: http.IncomingMessage, response: http.ServerResponse): Promise<boolean> {
    const match = /^\/interaction\/([^/?]+)(\/login)?/.exec(request.url ?? '');
    if (!match) return false;
    const details = await this.#provider.interactionDetails(request, response);
    if (request.method === 'POST' && match[2]) {
      const body = new URLSearchParams(await new Promise<string>((resolve) => {
        let text = '';
        request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        request.on('end', () => resolve(text));
      }));
      const login = body.get('login') ?? '';
      if (!this.people.has(login)) {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(this.#loginPage(match[1]!, `No person ${login}`));
        return true;
      }
      await this.#provider.interactionFinished(request, response, { login: { accountId: login } }, { mergeWithLastSubmission: false });
      return true;
    }
    if (details.prompt.name === 'login') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(this.#loginPage(match[1]!));
      return true;
    }
    // Consent: every scope and claim asked for, at once.
    const grant = details.grantId ? await this.#provider.Grant.find(details.grantId) : new this.#provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
    grant!.addOIDCScope(String(details.params.scope));
    const grantId = await grant!.save();
    await this.#provider.interactionFinished(request, response, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return true;
  }

  #loginPage(uid: string, problem = ''): string {
    const escape = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
    return `<!doctype html><html><head><title>Demo provider: sign in</title></head><body><h1>Sign in at the demo provider</h1><p>${escape(problem)}</p><p>Type who you are: ${escape([...this.people.keys()].join(', '))}.</p>
<form method="post" action="/interaction/${escape(uid)}/login"><label>Who <input name="login" autofocus></label><button type="submit">Sign in</button></form></body></html>`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
