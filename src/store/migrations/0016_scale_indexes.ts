import type { Kysely } from 'kysely';
import { createIndexOnline, dropIndexOnline, type IndexDefinition } from '../online-index.ts';

/**
 * Issue 30: indexes that keep the cost of the periodic jobs and of every list filter flat as the
 * tables grow, built without locking the tables (store/online-index.ts), hence outside a
 * transaction.
 *
 * - Retention reads the sessions not yet redacted in expiry order, and the attempts whose response
 *   body is still stored in start order: partial indexes of exactly those rows, so a run with
 *   nothing due reads one index page. They replace the indexes of migration 0004, which could not
 *   serve `redacted_at is null order by expires_at` (PostgreSQL scanned the table every minute) and
 *   held every attempt ever made.
 * - Every filter of a list the API offers, beside the organization (or application, or endpoint)
 *   and in id order, so a page reads its rows and no more: sessions by status, events by type,
 *   finished deliveries by status, keys of an environment (until now keys were listed by a scan).
 */
export const transactional = false;

const LIST_FILTERS: IndexDefinition[] = [
  { name: 'sessions_org_env_status', table: 'sessions', columns: ['org_id', 'environment', 'status', 'id'] },
  { name: 'sessions_app_status', table: 'sessions', columns: ['app_id', 'status', 'id'] },
  { name: 'events_org_env_type', table: 'events', columns: ['org_id', 'environment', 'type', 'id'] },
  { name: 'events_app_type', table: 'events', columns: ['app_id', 'type', 'id'] },
  // Only finished deliveries (no due_at): a pending or sending one is found through the claim's
  // partial index by endpoint (0011), and the claim, which reads due rows, cannot pick this one.
  {
    name: 'webhook_deliveries_done_by_status',
    table: 'webhook_deliveries',
    columns: ['endpoint_id', 'status', 'id'],
    where: 'due_at is null',
  },
  { name: 'api_keys_org_env', table: 'api_keys', columns: ['org_id', 'environment', 'id'] },
];

export async function up(db: Kysely<any>): Promise<void> {
  await createIndexOnline(db, {
    name: 'sessions_retention_due',
    table: 'sessions',
    columns: ['expires_at'],
    where: 'redacted_at is null',
  });
  await dropIndexOnline(db, 'sessions_retention', 'sessions');
  await createIndexOnline(db, {
    name: 'webhook_attempts_body_kept',
    table: 'webhook_attempts',
    columns: ['started_at'],
    where: "response_body <> ''",
  });
  await dropIndexOnline(db, 'webhook_attempts_started', 'webhook_attempts');
  for (const definition of LIST_FILTERS) await createIndexOnline(db, definition);
}
