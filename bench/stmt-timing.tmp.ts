// Imported before the bench: wraps better-sqlite3 statements to sum wall time per SQL text.
import SQLite from 'better-sqlite3';
const totals = new Map<string, { n: number; ns: bigint }>();
const proto = (SQLite as any).prototype;
const origPrepare = proto.prepare;
proto.prepare = function (sql: string) {
  const st = origPrepare.call(this, sql);
  for (const m of ['run', 'all', 'get', 'iterate']) {
    const f = st[m];
    if (typeof f !== 'function') continue;
    st[m] = function (...a: unknown[]) {
      const t = process.hrtime.bigint();
      try { return f.apply(st, a); } finally {
        const e = totals.get(sql) ?? { n: 0, ns: 0n }; e.n++; e.ns += process.hrtime.bigint() - t; totals.set(sql, e);
      }
    };
  }
  return st;
};
const origExec = proto.exec;
proto.exec = function (sql: string) { const t = process.hrtime.bigint(); try { return origExec.call(this, sql); } finally { const e = totals.get('EXEC ' + sql) ?? { n: 0, ns: 0n }; e.n++; e.ns += process.hrtime.bigint() - t; totals.set('EXEC ' + sql, e); } };
process.on('exit', () => {
  const rows = [...totals].sort((a, b) => Number(b[1].ns - a[1].ns)).slice(0, 15);
  for (const [sql, { n, ns }] of rows) console.error(String(Number(ns / 1000000n)).padStart(7), 'ms', String(n).padStart(8), 'x', (Number(ns) / n / 1000).toFixed(1).padStart(7), 'µs', sql.replace(/\s+/g, ' ').slice(0, 200));
});
