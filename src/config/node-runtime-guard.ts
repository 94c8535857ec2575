import { unsupportedRuntime } from './node-runtime.ts';

// Imported first by the CLI's entry point: ES modules evaluate in import order, so on an
// unsupported Node.js the process stops here with a message, before the SQLite addon loads.
const problem = unsupportedRuntime(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(problem);
  process.exit(1);
}
