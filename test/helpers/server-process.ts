import { spawn, type ChildProcess } from 'node:child_process';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The CLI from its TypeScript sources (through tsx), so that tests never run a stale dist/. */
// The processes answer as the in-process test apps do: checked against their OpenAPI document.
const KEYFLEET = ['--import', 'tsx', '--import', './test/helpers/conformance-preload.ts', 'src/cli/main.ts'];

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

/**
 * `keyfleet serve` as a child process on a free port of 127.0.0.1, with only PATH and `env` in
 * its environment; `nodeArguments` go to node before the script (--expose-gc, say).
 */
export function serveProcess(env: Record<string, string>, { nodeArguments = [] }: { nodeArguments?: string[] } = {}): ServerProcess {
  const child = spawn(process.execPath, [...nodeArguments, ...KEYFLEET, 'serve'], {
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
      await stopProcess(child);
      return exited;
    },
  };
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A long-running `keyfleet …` child process (serve, dispatch) with only PATH and the given settings. */
export function spawnKeyfleet(env: Record<string, string>, ...args: string[]): ChildProcess {
  return spawn(process.execPath, [...KEYFLEET, ...args], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Waits until `url` answers 2xx (a start through tsx on a loaded host can take 30 s); fails if the process exits first. */
export async function waitUntilServing(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`keyfleet exited with ${child.exitCode}`);
      return fetch(url).then((response) => response.ok, () => false);
    },
    timeoutMs,
    `${url} answering`,
  );
}

/** Sends a signal and waits for the process to exit. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}
