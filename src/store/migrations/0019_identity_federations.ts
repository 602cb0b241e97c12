import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/**
 * Identity federations (docs/university-login.md): a signed metadata aggregate (eduGAIN style)
 * whose identity providers become registry entries (identity_providers.federation = its id). Kept:
 * where it is fetched from (null when loaded from a file), the certificate its signature must
 * verify under, and what the last load told: validUntil, cacheDuration, when to refresh next, and
 * the last failure. An index on identity_providers.federation makes a refresh's diff and a removal
 * cheap.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);
  await db.schema
    .createTable('identity_federations')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('environment', key, (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('metadata_url', 'text')
    // Country of entries whose metadata tells none (a national federation's own country).
    .addColumn('default_country', 'text')
    .addColumn('signing_certificate', 'text', (c) => c.notNull())
    .addColumn('valid_until', 'text')
    .addColumn('cache_duration_seconds', 'integer')
    .addColumn('entity_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('refreshed_at', 'text')
    .addColumn('next_refresh_at', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('identity_federations_due')
    .on('identity_federations')
    .column('next_refresh_at')
    .execute();
  await db.schema.createIndex('identity_providers_federation').on('identity_providers').column('federation').execute();
}
