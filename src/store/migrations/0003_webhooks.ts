import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/** Webhook endpoints, their deliveries (the outbox rows a worker claims) and the attempt log. */
export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('app_id', key, (c) => c.notNull().references('applications.id'))
    .addColumn('org_id', key, (c) => c.notNull())
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_app').on('webhook_endpoints').columns(['app_id', 'id']).execute();
  await db.schema
    .createIndex('webhook_endpoints_org_env')
    .on('webhook_endpoints')
    .columns(['org_id', 'environment', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('endpoint_id', key, (c) => c.notNull().references('webhook_endpoints.id'))
    .addColumn('event_id', key, (c) => c.notNull().references('events.id'))
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('due_at', 'text')
    .addColumn('lease_token', 'text')
    .addColumn('attempt_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'text')
    .execute();
  // The claim query: due rows in due order. Terminal rows have no due_at.
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['due_at', 'status'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_endpoint')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'id'])
    .execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('delivery_id', key, (c) => c.notNull().references('webhook_deliveries.id'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('worker_id', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('error_message', 'text')
    .addColumn('response_body', 'text', (c) => c.notNull())
    .addColumn('response_body_truncated', 'integer', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_attempts_delivery')
    .on('webhook_attempts')
    .columns(['delivery_id', 'attempt'])
    .execute();
}
