import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/**
 * Nonces spent by `POST /verification/v1/verify`, one row per organization and nonce (issue 10,
 * finding 2). The primary key is what makes a nonce single-use when two requests race; rows live
 * longer than any presentation stays fresh and are then purged by the periodic job.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);
  await db.schema
    .createTable('spent_nonces')
    .addColumn('org_id', key, (c) => c.notNull())
    .addColumn('nonce_hash', key, (c) => c.notNull())
    .addColumn('spent_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('spent_nonces_pk', ['org_id', 'nonce_hash'])
    .execute();
  await db.schema.createIndex('spent_nonces_expiry').on('spent_nonces').column('expires_at').execute();
}
