import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/**
 * Credential profiles added through the admin API or `matricula profiles add` (the built-in ones
 * and CREDENTIAL_PROFILES_FILE's live in code and configuration). The definition is the profile as
 * JSON, checked again when read: a row the current code cannot accept is skipped, never trusted.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('credential_profiles')
    .addColumn('id', keyTextType(db), (c) => c.primaryKey())
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('credential_profiles').execute();
}
