/**
 * Single sign-on in two minutes, without an identity provider of your own:
 *
 *   npm run demo:sso
 *
 * Starts a local OpenID Provider (demo/openid-provider.ts) with two demo people and keyfleet
 * beside it on a data directory of its own, binds their roles, and prints where to sign in.
 * Ctrl-C stops both. DEMO_PORT (8080) and DEMO_IDP_PORT (9090) move them; DEMO_DATA_DIR
 * (./data-sso-demo) is where keyfleet keeps its SQLite database.
 */
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OpenIdProvider, type ProviderPerson } from './openid-provider.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist/src/cli/main.js');
const port = Number(process.env.DEMO_PORT ?? 8080);
const idpPort = Number(process.env.DEMO_IDP_PORT ?? 9090);
const dataDir = path.resolve(process.env.DEMO_DATA_DIR ?? path.join(ROOT, 'data-sso-demo'));
const base = `http://127.0.0.1:${port}`;

/** Ada administers keyfleet; Grace manages the ACLs of the demo customer only. */
const PEOPLE: ProviderPerson[] = [
  { sub: 'ada', email: 'ada@example.com', name: 'Ada Admin', groups: ['keyfleet-admins'] },
  { sub: 'grace', email: 'grace@example.com', name: 'Grace Security', groups: ['store-security'] },
];

const idp = await OpenIdProvider.start(`${base}/auth/oidc/callback`, `${base}/console/`, PEOPLE, { port: idpPort });
const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, ...idp.keyfleetSettings(base) };
const keyfleet = (...args: string[]) => execFileSync(process.execPath, [CLI, ...args, '--json'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const listed = JSON.parse(keyfleet('customer', 'list')) as { customers: { name: string }[] };
if (!listed.customers.some((customer) => customer.name === 'demo')) keyfleet('customer', 'create', 'demo');
const bindings = JSON.parse(keyfleet('role', 'list')) as { bindings: { value: string }[] };
if (!bindings.bindings.some((binding) => binding.value === 'keyfleet-admins')) keyfleet('role', 'bind', 'admin', '--group', 'keyfleet-admins');
if (!bindings.bindings.some((binding) => binding.value === 'store-security')) keyfleet('role', 'bind', 'acl-manager', '--group', 'store-security', '--customer', 'demo');

const server = spawn(process.execPath, [CLI, 'serve'], { env: { ...env, LOG_LEVEL: 'warn' }, stdio: 'inherit' });
process.stdout.write(`
keyfleet with single sign-on: ${base}/console/
  1. open it and choose "Sign in with single sign-on";
  2. at the demo provider (${idp.issuer}) type ada (admin) or grace (ACL manager of customer demo);
  3. sign out, and sign in as the other one.
Ctrl-C stops keyfleet and the provider.
`);
const stop = () => server.kill('SIGTERM');
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
server.once('exit', (code) => {
  void idp.close().then(() => process.exit(code ?? 0));
});
