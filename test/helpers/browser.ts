import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/** Names of the Chromium executable on PATH: Debian's package installs `chromium`, Ubuntu's and others `chromium-browser`. */
const CHROMIUM_NAMES = ['chromium', 'chromium-browser'];

/** Headless, and nothing that reaches the network or writes profile state behind the test's back. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const isExecutableFile = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
};

const runsInCi = (env: NodeJS.ProcessEnv) => env.CI !== undefined && !['', '0', 'false'].includes(env.CI.toLowerCase());

/**
 * The Chromium to drive: CHROMIUM_PATH when set (and then it must be an executable), else the
 * first `chromium` or `chromium-browser` on PATH; undefined when there is none.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CHROMIUM_PATH) {
    if (!isExecutableFile(env.CHROMIUM_PATH)) throw new Error(`CHROMIUM_PATH=${env.CHROMIUM_PATH} is not an executable file`);
    return env.CHROMIUM_PATH;
  }
  for (const directory of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    for (const name of CHROMIUM_NAMES) {
      const candidate = path.join(directory, name);
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

/**
 * For `test(name, { skip: browserTestSkip() }, ...)`: false when a Chromium is found; outside CI a
 * reason to skip when none is; in CI (CI=true) a missing browser is an error, never a skip.
 */
export function browserTestSkip(env: NodeJS.ProcessEnv = process.env): string | false {
  if (findChromium(env) !== undefined) return false;
  const missing = 'no Chromium: neither CHROMIUM_PATH nor `chromium` or `chromium-browser` on PATH (apt-get install chromium)';
  if (runsInCi(env)) throw new Error(`${missing}, and CI requires it`);
  return missing;
}

/** A headless Chromium found by findChromium (call browserTestSkip first). */
export function launchChromium(): Promise<Browser> {
  const executablePath = findChromium();
  if (executablePath === undefined) throw new Error('no Chromium found (see browserTestSkip)');
  return chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}
