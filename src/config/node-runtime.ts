import packageJson from '../../package.json' with { type: 'json' };

/**
 * The oldest Node.js major keyfleet runs on, from package.json's `engines.node` (">=22").
 * On an older Node the SQLite driver's native addon crashes the process (a segmentation
 * fault, not a message), so the CLI checks this before it loads anything else.
 */
export function minimumNodeMajor(engines: string = packageJson.engines.node): number {
  const match = /^>=\s*(\d+)/.exec(engines);
  if (!match) throw new Error(`package.json engines.node should read ">=N", not "${engines}"`);
  return Number(match[1]);
}

/** Why `version` (as `process.versions.node` gives it) cannot run keyfleet, or undefined when it can. */
export function unsupportedRuntime(version: string, minimum = minimumNodeMajor()): string | undefined {
  const major = Number(version.split('.')[0]);
  if (Number.isInteger(major) && major >= minimum) return undefined;
  return (
    `keyfleet needs Node.js ${minimum} or newer (24 LTS is the one it is built and tested on); this is Node.js ${version}.\n` +
    `In a checkout, \`npm start\`, \`npm test\` and \`npx keyfleet\` run the Node.js that \`npm ci\` installs (node_modules/.bin/node); ` +
    `a production install (npm ci --omit=dev) runs on the host's Node.js, so install Node.js ${minimum} or 24 there (docs/operator-guide.md, "Supported Node.js versions").\n`
  );
}
