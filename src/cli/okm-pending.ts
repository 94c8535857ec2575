import type { Command } from 'commander';
import { InvalidCursorError } from '../db/cursor-pages.ts';
import { pendingOkmRecords } from '../okm/pending-service.ts';
import { UsageError, commandGroup, openContext, printResult } from './context.ts';

const PER_PAGE = 100;

export function register(program: Command): void {
  commandGroup(program, 'okm', 'manage OKMs')
    .command('pending')
    .description(`list the OKMs waiting to be accepted (OKM_AUTO_ENROL=false), ${PER_PAGE} a page, by serial number`)
    .option('--cursor <cursor>', 'the next page: the cursor the previous page printed')
    .option('--json', 'print one JSON object')
    .action(async (options: { cursor?: string; json?: boolean }) => {
      const context = await openContext();
      try {
        const page = await pendingOkmRecords(context.db, { limit: PER_PAGE, cursor: options.cursor }).catch((error: unknown) => {
          if (error instanceof InvalidCursorError) throw new UsageError('--cursor: not a cursor of this list; pass the one a page printed, unchanged');
          throw error;
        });
        const lines = page.items.map(
          (okm) =>
            `${okm.serial_number}  first ${okm.first_seen_at}  last ${okm.last_seen_at} from ${okm.last_ip}` +
            `  firmware ${okm.firmware_version ?? '-'}  calls ${okm.calls}`,
        );
        const shown =
          page.items.length === 0
            ? options.cursor === undefined
              ? 'no pending OKMs'
              : 'no more pending OKMs'
            : `${page.items.length} pending on this page` + (page.nextCursor === null ? '' : `; the next page: keyfleet okm pending --cursor ${page.nextCursor}`);
        printResult(options.json, { pending: page.items, next_cursor: page.nextCursor }, [...lines, shown].join('\n'));
      } finally {
        await context.close();
      }
    });
}
