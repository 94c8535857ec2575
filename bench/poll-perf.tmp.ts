import { requestPaths, seedFleet } from './fleet.ts';
import { buildServer, forEachBenchDatabase, measure, pathsLoad, startKeyfleet, stop, withDb } from './harness.ts';
import { loadSettings } from '../src/config/settings.ts';
const OKMS = 100000;
if (!process.env.SKIP_BUILD) buildServer();
await forEachBenchDatabase({ sqlite: process.argv.includes('--sqlite'), postgres: process.argv.includes('--postgres') }, async (database) => {
  await seedFleet(database.env, OKMS);
  const settings = loadSettings({ ...database.env, LOG_LEVEL: 'silent' });
  const { port, child } = await startKeyfleet({ ...database.env, ...JSON.parse(process.env.EXTRA_ENV ?? '{}') }, { built: true, cpuProfileDir: process.env.PROF_DIR });
  console.log('measuring pid', child.pid);
  const paths = requestPaths(settings.configPath, OKMS);
  const figures = await measure(`keyfleet ${database.name}`, port, pathsLoad(paths, 100, 16), { server: child, postgres: database.name === 'postgres', warmUpSeconds: 4 });
  console.log(figures);
  await stop(child);
});
