import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServerProcess {
  /** Resolves with the base URL once the server listens. */
  listening: Promise<string>;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>;
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<number | string>;
}

/** `keyfleet serve` as a child process on a free port of 127.0.0.1, with only PATH and `env` in its environment. */
export function serveProcess(env: Record<string, string>): ServerProcess {
  const child = spawn('node', ['bin/keyfleet.js', 'serve'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'info', ...env, PORT: '0', HOST: '127.0.0.1' },
  });
  let output = '';
  const collect = (chunk: Buffer) => (output += chunk.toString('utf8'));
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const listening = new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', check);
    child.once('exit', () => reject(new Error(`server exited: ${output}`)));
  });
  listening.catch(() => {});
  return {
    listening,
    output: () => output,
    exited,
    kill: (signal) => child.kill(signal),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
