import type { Kysely } from 'kysely';

/**
 * One row that /readyz rewrites: a database that answers reads but cannot write (a full disk, a
 * read-only file, a standby after a failover) is not ready, and only a write finds that out.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('health_probe')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('checked_at', 'text', (c) => c.notNull())
    .execute();
  await db
    .insertInto('health_probe')
    .values({ id: 1, checked_at: new Date(0).toISOString() })
    .execute();
}
