import type { Kysely } from 'kysely';

/**
 * Redaction finds the deliveries of a session's events (to empty their attempts' response bodies)
 * by event: without this index each redaction read every delivery.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute();
}
