import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);

  await db.schema
    .createTable('organizations')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('applications')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('org_id', key, (c) => c.notNull().references('organizations.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('applications_org_status')
    .on('applications')
    .columns(['org_id', 'status', 'id'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('app_id', key, (c) => c.notNull().references('applications.id'))
    .addColumn('org_id', key, (c) => c.notNull().references('organizations.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('key_hint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_keys_app').on('api_keys').columns(['app_id', 'id']).execute();

  await db.schema
    .createTable('revoked_keys')
    .addColumn('key_hash', 'text', (c) => c.primaryKey())
    .addColumn('key_id', key, (c) => c.notNull())
    .addColumn('app_id', key, (c) => c.notNull())
    .addColumn('org_id', key, (c) => c.notNull())
    .addColumn('revoked_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['scope', 'idempotency_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').column('created_at').execute();
}
