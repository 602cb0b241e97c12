/**
 * Erased means erased: after a redaction commits, older copies of the values it overwrote are
 * removed from the database's files as far as the dialect allows (store/dialect.ts, `erasure`).
 * docs/security.md says what each dialect leaves, and for how long.
 */
import type { Db } from './db.ts';
import { capabilitiesOf } from './dialect.ts';
import type { Database } from './schema.ts';

/** The tables a session's redaction rewrites (services/redaction.ts). */
export const REDACTION_TABLES: ReadonlyArray<keyof Database> = [
  'sessions',
  'events',
  'webhook_attempts',
  'idempotency_keys',
];

/**
 * After a batch of redactions has committed (one POST …/redact, or one batch of the retention
 * sweep). SQLite: the write-ahead log, which still holds the pages as they were, is checkpointed
 * and emptied. PostgreSQL: nothing (the sweep vacuums).
 */
export async function afterRedactionBatch(db: Db): Promise<void> {
  await capabilitiesOf(db).erasure.afterBatch(db);
}

/**
 * After a retention run that rewrote `tables`. PostgreSQL: a plain VACUUM of them removes the
 * old row versions holding the erased values. SQLite: nothing more (each batch was checkpointed).
 * Never inside a transaction.
 */
export async function afterRetentionSweep(db: Db, tables: ReadonlyArray<keyof Database>): Promise<void> {
  if (tables.length > 0) await capabilitiesOf(db).erasure.afterSweep(db, tables);
}
