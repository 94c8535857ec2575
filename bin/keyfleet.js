#!/usr/bin/env node
// The CLI runs the JavaScript that `npm ci` (the prepare script) compiles into dist/.
await import('../dist/src/cli/main.js');
