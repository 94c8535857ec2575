import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './server-process.ts';

const run = promisify(execFile);

/** Where Debian and Ubuntu install the server binaries; POSTGRES_BIN_DIR overrides it. */
const BIN_DIR = process.env.POSTGRES_BIN_DIR ?? '/usr/lib/postgresql/15/bin';
/** PostgreSQL refuses to run as root: a root test runs it as this OS user. */
const SERVER_USER = 'postgres';

/** A PostgreSQL cluster of a test's own, on a free port of 127.0.0.1, that the test may stop and start. */
export interface ThrowawayCluster {
  /** Connection URL (trust authentication, superuser "keyfleet", database "postgres"). */
  url: string;
  /** `pg_ctl stop -m <mode>`: fast ends sessions cleanly, immediate kills the server as a crash would. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts the cluster again; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops the cluster and removes its files. */
  destroy(): Promise<void>;
}

/** Why no throwaway cluster can be made here, or undefined when one can. In CI (CI=true) that is a failure, never a skip. */
export function clusterUnavailableReason(): string | undefined {
  if (fs.existsSync(path.join(BIN_DIR, 'initdb'))) return undefined;
  const reason = `no PostgreSQL server binaries in ${BIN_DIR} (set POSTGRES_BIN_DIR)`;
  if (process.env.CI) throw new Error(`${reason}, and CI requires them`);
  return reason;
}

export async function startThrowawayCluster(): Promise<ThrowawayCluster> {
  const asRoot = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-pg-'));
  if (asRoot) {
    const { stdout } = await run('id', ['-u', SERVER_USER]);
    const { stdout: group } = await run('id', ['-g', SERVER_USER]);
    fs.chownSync(dir, Number(stdout.trim()), Number(group.trim()));
  }
  const pg = (binary: string, ...args: string[]) => {
    const command = path.join(BIN_DIR, binary);
    return asRoot ? run('runuser', ['-u', SERVER_USER, '--', command, ...args], { cwd: dir }) : run(command, args, { cwd: dir });
  };
  const dataDir = path.join(dir, 'data');
  const port = await freePort();
  await pg('initdb', '-D', dataDir, '-U', 'keyfleet', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions');
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c shared_buffers=16MB -c max_connections=40`;
  const start = async () => {
    await pg('pg_ctl', '-D', dataDir, '-l', path.join(dir, 'server.log'), '-o', serverOptions, '-w', '-t', '30', 'start');
  };
  const stop = async (mode: 'fast' | 'immediate') => {
    await pg('pg_ctl', '-D', dataDir, '-m', mode, '-w', '-t', '30', 'stop');
  };
  await start();
  return {
    url: `postgres://keyfleet@127.0.0.1:${port}/postgres`,
    stop,
    start,
    async destroy() {
      await stop('immediate').catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
