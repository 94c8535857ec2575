import type { Command } from 'commander';
import { pendingOkmRecords } from '../okm/pending-service.ts';
import { UsageError, commandGroup, openContext, printResult } from './context.ts';

const PER_PAGE = 100;

function pageNumber(text: string): number {
  if (!/^[1-9]\d{0,5}$/.test(text)) throw new UsageError(`--page: expected a page number from 1, got "${text}"`);
  return Number(text);
}

export function register(program: Command): void {
  commandGroup(program, 'okm', 'manage OKMs')
    .command('pending')
    .description(`list the OKMs waiting to be accepted (OKM_AUTO_ENROL=false), ${PER_PAGE} a page, by serial number`)
    .option('--page <n>', 'page number, from 1', '1')
    .option('--json', 'print one JSON object')
    .action(async (options: { page: string; json?: boolean }) => {
      const page = pageNumber(options.page);
      const context = await openContext();
      try {
        const { items, total } = await pendingOkmRecords(context.db, page, PER_PAGE);
        const lines = items.map(
          (okm) =>
            `${okm.serial_number}  first ${okm.first_seen_at}  last ${okm.last_seen_at} from ${okm.last_ip}` +
            `  firmware ${okm.firmware_version ?? '-'}  calls ${okm.calls}`,
        );
        const shown = total === 0 ? 'no pending OKMs' : `${items.length} of ${total} pending (page ${page})`;
        printResult(options.json, { page, total, pending: items }, [...lines, shown].join('\n'));
      } finally {
        await context.close();
      }
    });
}
