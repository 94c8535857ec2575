/** The JSON log records in a process's output, in the order written (other lines skipped). */
export function logRecords(output: string): Record<string, unknown>[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/**
 * Whether the primary of `serve --workers` logged "stopped" (with exit code 0) no earlier than
 * every "worker stopped". Lines in a pipe may come out a record or two apart from the order of
 * the calls (a write retried after EAGAIN), so the records' times decide.
 */
export function primaryStoppedAfterItsWorkers(output: string): boolean {
  const records = logRecords(output);
  const stopped = records.find((record) => record.msg === 'stopped' && record.exitCode === 0);
  const workersStopped = records.filter((record) => record.msg === 'worker stopped');
  return stopped !== undefined && workersStopped.length > 0 && workersStopped.every((record) => Number(record.time) <= Number(stopped.time));
}
