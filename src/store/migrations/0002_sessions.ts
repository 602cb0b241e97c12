import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/** Trust registry, verification sessions and the event outbox. */
export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);

  await db.schema
    .createTable('issuers')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('country', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('keys', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('issuers_domain_environment', ['domain', 'environment'])
    .execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('app_id', key, (c) => c.notNull().references('applications.id'))
    .addColumn('org_id', key, (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('challenge_nonce', 'text', (c) => c.notNull().unique())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('required_claims', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('client_reference', 'text')
    .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('verified', 'integer')
    .addColumn('result', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('consented_at', 'text')
    .addColumn('completed_at', 'text')
    .execute();
  await db.schema.createIndex('sessions_app').on('sessions').columns(['app_id', 'id']).execute();
  await db.schema.createIndex('sessions_org_env').on('sessions').columns(['org_id', 'environment', 'id']).execute();
  await db.schema.createIndex('sessions_open_expiry').on('sessions').columns(['status', 'expires_at']).execute();

  await db.schema
    .createTable('events')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('app_id', key, (c) => c.notNull())
    .addColumn('org_id', key, (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_app').on('events').columns(['app_id', 'id']).execute();
  await db.schema.createIndex('events_org_env').on('events').columns(['org_id', 'environment', 'id']).execute();
}
