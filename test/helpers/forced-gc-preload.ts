// Loaded with --import into a server started with --expose-gc: collects the young generation
// every 10 ms and the whole heap every 200 ms (a full collection every few ms starves the
// server), so that native objects the process drops (prepared statements, a closed
// database's handles) are finalized while it serves and while it shuts down, not at some
// later, lucky moment. A native addon whose finalizers are unsafe on this Node.js aborts here.
const collect = (globalThis as { gc?: (options?: { type: 'minor' | 'major' }) => void }).gc;
if (!collect) throw new Error('forced-gc-preload needs node --expose-gc');
setInterval(() => collect({ type: 'minor' }), 10).unref();
setInterval(() => collect(), 200).unref();
process.once('exit', () => collect());
