/**
 * A browser's part of a sign-in, without a browser: follows redirects between keyfleet and the
 * OpenID Provider, keeps each host's cookies, and fills in the provider's sign-in form. What
 * keyfleet and the provider do is theirs alone; this only carries their answers as a browser would.
 */

export interface Hop {
  method: string;
  url: string;
  status: number;
  location: string | undefined;
}

export class SignInClient {
  /** Cookies by origin, then name. */
  readonly #jar = new Map<string, Map<string, string>>();
  readonly hops: Hop[] = [];

  cookie(origin: string, name: string): string | undefined {
    return this.#jar.get(origin)?.get(name);
  }

  setCookie(origin: string, name: string, value: string): void {
    if (!this.#jar.has(origin)) this.#jar.set(origin, new Map());
    this.#jar.get(origin)!.set(name, value);
  }

  /** One request with this client's cookies for the URL's origin; stores the cookies it sets. */
  async request(url: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Response> {
    const { origin } = new URL(url);
    const cookies = [...(this.#jar.get(origin) ?? new Map<string, string>())].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(url, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: { ...(cookies ? { cookie: cookies } : {}), ...(init.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...init.headers },
      ...(init.body ? { body: init.body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const separator = pair!.indexOf('=');
      const name = pair!.slice(0, separator).trim();
      const value = pair!.slice(separator + 1).trim();
      const expired = attributes.some((attribute) => /^\s*max-age=0\s*$/i.test(attribute) || /^\s*expires=thu, 01 jan 1970/i.test(attribute));
      if (expired || value === '') this.#jar.get(origin)?.delete(name);
      else this.setCookie(origin, name, value);
    }
    this.hops.push({ method: init.method ?? 'GET', url, status: response.status, location: response.headers.get('location') ?? undefined });
    return response;
  }

  /** Follows redirects from `url` until an answer that is not one; at most 20 hops. */
  async follow(url: string, init: { method?: string; body?: string } = {}): Promise<{ response: Response; url: string }> {
    let response = await this.request(url, init);
    let current = url;
    for (let hop = 0; hop < 20 && response.status >= 300 && response.status < 400; hop++) {
      current = new URL(response.headers.get('location')!, current).toString();
      response = await this.request(current);
    }
    return { response, url: current };
  }

  /**
   * Signs in at keyfleet `base` as `login` at the provider: from /auth/oidc/login through the
   * provider's form back to keyfleet. Returns the last answer (the console, or a page saying why not).
   */
  async signIn(base: string, login: string, returnTo?: string): Promise<{ response: Response; url: string }> {
    const start = `${base}/auth/oidc/login${returnTo === undefined ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`;
    const atForm = await this.follow(start);
    if (atForm.response.status !== 200 || !atForm.url.includes('/interaction/')) return atForm;
    const html = await atForm.response.text();
    const action = /action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no sign-in form at ${atForm.url}: ${html.slice(0, 200)}`);
    return this.follow(new URL(action, atForm.url).toString(), { method: 'POST', body: new URLSearchParams({ login }).toString() });
  }
}
