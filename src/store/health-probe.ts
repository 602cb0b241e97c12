import type { Db } from './db.ts';

/**
 * Rewrites the probe row: succeeds only if the database can take a write and commit it now.
 * Throws what the driver throws (a full disk, a read-only database, a lost connection).
 */
export async function probeWrite(db: Db, at: Date): Promise<void> {
  await db.updateTable('health_probe').set({ checked_at: at.toISOString() }).where('id', '=', 1).execute();
}
