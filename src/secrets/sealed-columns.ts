import type { Database } from '../db/schema.ts';

/**
 * A column that holds values sealed under the master key, and how to rebuild each row's
 * associated data: what master-key rotation needs to reseal it. Each capability declares its
 * own beside the code that seals, and src/key-ring.ts lists them.
 */
export interface SealedColumn<Table extends keyof Database = keyof Database> {
  table: Table;
  column: keyof Database[Table] & string;
  /** A unique column that orders and identifies the rows. */
  key: keyof Database[Table] & string;
  /** The columns associatedData reads. */
  reads: (keyof Database[Table] & string)[];
  associatedData(row: Record<string, unknown>): string;
}

export const sealedColumn = <Table extends keyof Database>(column: SealedColumn<Table>): SealedColumn => column as unknown as SealedColumn;
