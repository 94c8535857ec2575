import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** `node` arguments that run keyfleet from the TypeScript sources, so that tests never run a stale dist/. */
export const KEYFLEET_SOURCES = ['--import', 'tsx', path.join(PROJECT_ROOT, 'src/cli/main.ts')];

export interface CliRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `keyfleet ARGS` as a child process with only PATH and the given settings in its
 * environment, from the sources (KEYFLEET_SOURCES).
 */
export function runKeyfleet(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...KEYFLEET_SOURCES, ...args],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', ...env } },
      (error, stdout, stderr) => resolve({ exitCode: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
