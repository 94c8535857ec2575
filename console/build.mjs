// Bundles the operator console (console/src) into console/dist, which `keyfleet serve` serves
// at /console/. Run by `npm ci`/`npm install` (the prepare script) and `npm run console:build`.
import { copyFile, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.join(here, 'dist');

await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });
await build({
  entryPoints: { app: path.join(here, 'src/main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir,
  legalComments: 'linked',
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) await copyFile(path.join(here, file), path.join(outdir, file));
