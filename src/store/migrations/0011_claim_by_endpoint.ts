import { sql, type Kysely } from 'kysely';

/**
 * The claim ranks each endpoint's oldest due deliveries (store/webhook-deliveries/claim.ts): it walks
 * the endpoints that have any delivery due or in flight, one step of this index each, and reads
 * each one's first few in due order. Partial, as the index of migration 0009: a delivered or
 * failed delivery has no `due_at`, so an endpoint's history is not in it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_due_at_by_endpoint')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'due_at'])
    .where(sql.ref('due_at'), 'is not', null)
    .execute();
}
