import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/**
 * Issuer trust beyond raw keys (X.509 anchors, SD-JWT VC issuer metadata) and the statuses an
 * operator set on sandbox credentials (the status lists Matricula publishes for the sandbox
 * universities).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);
  // JSON array of PEM certificates; null when the entry names none.
  await db.schema.alterTable('issuers').addColumn('anchors', 'text').execute();
  await db.schema.alterTable('issuers').addColumn('metadata_issuer', 'text').execute();

  await db.schema
    .createTable('sandbox_credential_statuses')
    .addColumn('domain', key, (c) => c.notNull())
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('sandbox_credential_statuses_pk', ['domain', 'idx'])
    .execute();
}
