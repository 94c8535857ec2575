#!/usr/bin/env node
// The CLI runs the TypeScript sources through tsx, so `npm ci` is the whole install.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
