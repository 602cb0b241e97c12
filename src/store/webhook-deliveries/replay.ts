import type { Db } from '../db.ts';

/**
 * Every failed delivery of an endpoint created at or after `since` becomes due now again (a
 * replay after an outage of the receiver), in one statement. Returns how many.
 */
export async function requeueFailedSince(db: Db, endpointId: string, since: string, now: string): Promise<number> {
  const updated = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', due_at: now, lease_token: null, updated_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'failed')
    .where('created_at', '>=', since)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows);
}
