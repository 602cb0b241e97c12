import { sql, type Kysely } from 'kysely';

/**
 * The claim's index: due deliveries in due order, and only those (a terminal delivery has no
 * `due_at`). The index it replaces, on (due_at, status), made PostgreSQL choose between reading it
 * in order with the status as a filter and matching the status list in the index, which returns
 * rows out of order: with the second it read every due row and every dead entry of the ones
 * already sent on each claim, to sort them, where the claim wants the first few in due order.
 * A comparison on `due_at` implies it is not null, so the claim uses this index as it is written,
 * with its values as parameters or not, on both databases.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_due').execute();
  await db.schema
    .createIndex('webhook_deliveries_due_at')
    .on('webhook_deliveries')
    .column('due_at')
    .where(sql.ref('due_at'), 'is not', null)
    .execute();
}
