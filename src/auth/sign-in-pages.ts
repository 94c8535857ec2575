import type { FastifyReply } from 'fastify';

/** The pages a browser is shown when a sign-in cannot go on: plain HTML that says why and offers another try. */

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

/** No script, no outside resource: the page is one document with its style inline. */
const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export function sendSignInProblem(reply: FastifyReply, statusCode: number, title: string, explanation: string): FastifyReply {
  const body = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>keyfleet · ${escapeHtml(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1f2933}h1{font-size:1.4rem}a{color:#1d4ed8}</style></head>
<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(explanation)}</p><p><a href="/auth/oidc/login">Sign in again</a> · <a href="/console/">Console</a></p></body>
</html>
`;
  return reply.code(statusCode).header('content-type', 'text/html; charset=utf-8').header('content-security-policy', PAGE_CSP).header('cache-control', 'no-store').send(body);
}
