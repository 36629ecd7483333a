/**
 * Rows loaded into a table in bulk, past the statement layer: what a projection rebuild's replay
 * writes its bare tables through (projections/rebuild.ts).
 */
export interface BulkWriter {
  /**
   * Appends `rows` (values in the order of `columns`: strings, numbers, booleans, Dates, null) to
   * `table` in one short transaction of its own: all of them, or none when it throws.
   */
  write(table: string, columns: readonly string[], rows: Iterable<readonly unknown[]>): Promise<void>;
}
