import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import consolePlugin, { findBuiltConsole, SINGLE_SIGN_ON_META } from '../../src/console/plugin.ts';
import { registerErrorHandling } from '../../src/http/error-handler.ts';

/** The console's routes over a stand-in build, as server.ts configures the router. */
async function serve(directory: string, singleSignOn?: boolean): Promise<FastifyInstance> {
  const app = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
  registerErrorHandling(app);
  await app.register(consolePlugin, { directory, ...(singleSignOn === undefined ? {} : { singleSignOn }) });
  await app.ready();
  return app;
}

let built: string;
let app: FastifyInstance;
before(async () => {
  built = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-console-dist-'));
  fs.writeFileSync(path.join(built, 'index.html'), '<!doctype html><html><head><title>console</title></head><body></body></html>');
  fs.writeFileSync(path.join(built, 'app.js'), 'console.log(1)');
  fs.writeFileSync(path.join(built, 'app.css'), 'body{}');
  app = await serve(built);
});
after(async () => {
  await app.close();
  fs.rmSync(built, { recursive: true, force: true });
});

test('GET / leads to the console, and /console to /console/', async () => {
  const root = await app.inject({ url: '/' });
  const bare = await app.inject({ url: '/console' });

  assert.equal(root.statusCode, 302);
  assert.equal(root.headers.location, '/console/');
  assert.equal(bare.statusCode, 301);
  assert.equal(bare.headers.location, '/console/');
});

test('the console’s files are served with a same-origin-only CSP, nosniff and an ETag that answers 304', async () => {
  const page = await app.inject({ url: '/console/' });
  const script = await app.inject({ url: '/console/app.js' });
  const again = await app.inject({ url: '/console/app.js', headers: { 'if-none-match': String(script.headers.etag) } });

  assert.equal(page.statusCode, 200);
  assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
  assert.match(String(page.headers['content-security-policy']), /^default-src 'self'/);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8');
  assert.equal(script.body, 'console.log(1)');
  assert.equal(again.statusCode, 304);
});

test('a deep link to a console page answers index.html; a missing file is a 404 in the API’s error shape', async () => {
  const deep = await app.inject({ url: '/console/okms/OKM-1?state=drifting' });
  const missing = await app.inject({ url: '/console/missing.js' });
  const nul = await app.inject({ url: '/console/%00' });

  assert.equal(deep.statusCode, 200);
  assert.match(deep.body, /<title>console<\/title>/);
  assert.equal(missing.statusCode, 404);
  assert.deepEqual(missing.json(), { error_code: 'NOT_FOUND', error_msg: 'console file missing.js not found' });
  assert.ok(nul.statusCode < 500);
});

test('a server whose console is not built still starts, and /console/ says how to build it', async () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-console-none-'));
  const unbuilt = await serve(empty);
  try {
    const answer = await unbuilt.inject({ url: '/console/' });

    assert.equal(answer.statusCode, 503);
    assert.match(answer.json().error_msg, /npm run console:build/);
  } finally {
    await unbuilt.close();
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

test('the built console is found from the sources and from dist/', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-root-'));
  fs.mkdirSync(path.join(root, 'console/dist'), { recursive: true });
  fs.writeFileSync(path.join(root, 'console/dist/index.html'), '');
  fs.mkdirSync(path.join(root, 'dist/src/console'), { recursive: true });

  assert.equal(findBuiltConsole(path.join(root, 'src/console')), path.join(root, 'console/dist'));
  assert.equal(findBuiltConsole(path.join(root, 'dist/src/console')), path.join(root, 'console/dist'));
  fs.rmSync(root, { recursive: true, force: true });
});

test('with single sign-on set up, every console page carries the meta tag that tells the script so, under the same CSP; without, none does', async () => {
  const withSso = await serve(built, true);
  try {
    const pages = await Promise.all(['/console/', '/console/okms/OKM-1'].map((url) => withSso.inject({ url })));
    const plain = await app.inject({ url: '/console/' });
    const revalidated = await withSso.inject({ url: '/console/', headers: { 'if-none-match': String(pages[0]!.headers.etag) } });

    for (const page of pages) {
      assert.equal(page.statusCode, 200);
      assert.match(page.body, new RegExp(`<head><title>console</title>\\s*${SINGLE_SIGN_ON_META}\\s*</head>`));
      assert.match(String(page.headers['content-security-policy']), /^default-src 'self'/);
    }
    assert.doesNotMatch(plain.body, /keyfleet-sign-in/);
    assert.notEqual(pages[0]!.headers.etag, plain.headers.etag, 'a cached page without the tag is not revalidated as current');
    assert.equal(revalidated.statusCode, 304);
  } finally {
    await withSso.close();
  }
});
