import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CliRun {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `keyfleet ARGS` as a child process with only PATH and the given settings in its
 * environment: the TypeScript sources through tsx, so that tests never run a stale dist/.
 */
export function runKeyfleet(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', ...env } },
      (error, stdout, stderr) => resolve({ exitCode: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
