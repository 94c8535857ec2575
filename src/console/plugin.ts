import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, notFound } from '../http/errors.ts';

/** The console's pages may load only what this server serves: no CDN, no other origin (contract §12.1). */
export const CONSOLE_CSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

const MEDIA_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const assetOf = (body: Buffer, type: string): Asset => ({ body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });

/**
 * console/dist, where `npm run console:build` (run by `npm ci`) writes the bundle: looked for
 * upwards from this file, which runs from src/console (tsx) or dist/src/console (built).
 */
export function findBuiltConsole(start = path.dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let directory = start; ; directory = path.dirname(directory)) {
    const candidate = path.join(directory, 'console', 'dist');
    if (existsSync(path.join(candidate, 'index.html'))) return candidate;
    if (path.dirname(directory) === directory) return undefined;
  }
}

async function loadAssets(directory: string): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  for (const name of await readdir(directory)) {
    const type = MEDIA_TYPES[path.extname(name)];
    if (type === undefined) continue;
    assets.set(name, assetOf(await readFile(path.join(directory, name)), type));
  }
  return assets;
}

export interface ConsoleOptions {
  /** The built console; default: findBuiltConsole(). */
  directory?: string;
  /** Whether people sign in through an OpenID Provider; default: whether the app's settings name one (OIDC_ISSUER). */
  singleSignOn?: boolean;
}

/**
 * Tells the console's script that single sign-on is set up, so that its sign-in page offers it
 * and it asks the server for a session: a meta tag, since the CSP allows no inline script.
 */
export const SINGLE_SIGN_ON_META = '<meta name="keyfleet-sign-in" content="single-sign-on" />';

/** index.html with SINGLE_SIGN_ON_META at the end of its head (or at its start, for a page without one). */
export function withSingleSignOnMeta(html: string): string {
  const headEnd = html.search(/<\/head>/i);
  return headEnd === -1 ? `${SINGLE_SIGN_ON_META}${html}` : `${html.slice(0, headEnd)}  ${SINGLE_SIGN_ON_META}\n  ${html.slice(headEnd)}`;
}

/**
 * The operator console (contract §12) at /console/, from the same process and origin as the API:
 * its few built files are read once at start and served from memory; any other path below
 * /console/ without a file extension is a page of the console (a deep link), answered with
 * index.html. `GET /` leads there. None of these routes is part of the API document.
 */
async function consolePlugin(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const directory = options.directory ?? findBuiltConsole();
  const assets = directory === undefined ? new Map<string, Asset>() : await loadAssets(directory);
  const singleSignOn = options.singleSignOn ?? (app.hasDecorator('settings') && app.settings.oidc !== undefined);
  const builtIndex = assets.get('index.html');
  if (builtIndex !== undefined && singleSignOn) assets.set('index.html', assetOf(Buffer.from(withSingleSignOnMeta(builtIndex.body.toString('utf8'))), builtIndex.type));
  if (!assets.has('index.html')) app.log.warn('the console is not built (no console/dist/index.html): /console/ answers 503 until `npm run console:build`');

  const send = (reply: FastifyReply, asset: Asset, ifNoneMatch: string | undefined) => {
    reply.headers({
      'content-security-policy': CONSOLE_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
      etag: asset.etag,
    });
    if (ifNoneMatch === asset.etag) return reply.code(304).send();
    return reply.type(asset.type).send(asset.body);
  };

  const hidden = { schema: { hide: true }, logLevel: 'warn' } as const;
  app.get('/', hidden, async (_request, reply) => reply.redirect('/console/', 302));
  const page = (wanted: string, request: FastifyRequest, reply: FastifyReply) => {
    const index = assets.get('index.html');
    if (index === undefined) throw new HttpError(503, 'CONSOLE_NOT_BUILT', 'The console is not built: run `npm run console:build` (npm ci does it)');
    const asset = assets.get(wanted);
    if (asset !== undefined) return send(reply, asset, request.headers['if-none-match']);
    if (path.posix.extname(wanted) !== '') throw notFound(`console file ${wanted} not found`);
    return send(reply, index, request.headers['if-none-match']);
  };
  // With ignoreTrailingSlash (server.ts) this route answers both /console and /console/: the
  // first is sent on to the second, where the console's links and its router's paths begin.
  app.get('/console', hidden, async (request, reply) =>
    new URL(request.url, 'http://console').pathname === '/console' ? reply.redirect('/console/', 301) : page('', request, reply),
  );
  app.get<{ Params: { '*': string } }>('/console/*', hidden, async (request, reply) => page(request.params['*'], request, reply));
}

export default fp(consolePlugin, { name: 'keyfleet-console' });
