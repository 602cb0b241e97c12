import { sql } from 'kysely';
import type { DeliveryStatus } from '../../domain/delivery-state.ts';
import type { Db } from '../db.ts';
import { capabilitiesOf } from '../dialect.ts';

/** A delivery in one of these is done: nothing will send it again unless retried by hand. */
const FINAL: ReadonlySet<DeliveryStatus> = new Set(['succeeded', 'failed']);

/**
 * What is kept of the deliveries and attempts: their stored response bodies are emptied by
 * redaction (one session's) and by result retention (those older than a cutoff); events with their
 * deliveries and attempts are deleted by event retention and with their endpoint, in batches.
 */

/**
 * Empties the stored response bodies of every attempt to deliver an event about `sessionId`: a
 * receiver may echo what it was sent, and redaction erases that too.
 */
export async function clearSessionAttemptBodies(db: Db, sessionId: string): Promise<number> {
  const result = await db
    .updateTable('webhook_attempts')
    .set({ response_body: '', response_body_truncated: 0 })
    .where('delivery_id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries as d')
        .innerJoin('events as ev', 'ev.id', 'd.event_id')
        .select('d.id')
        .where('ev.session_id', '=', sessionId),
    )
    .where('response_body', '<>', '')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * The attempts whose response body is still stored, started before `cutoff`, oldest first. The
 * condition is written as the partial index of migration 0016 is (a literal, not a parameter), so
 * that both databases read that index, which holds only those attempts: with nothing due the
 * query reads one index page.
 */
export function attemptsWithBodiesBefore(db: Db, cutoff: string, limit: number) {
  return db
    .selectFrom('webhook_attempts')
    .select('id')
    .where(sql<boolean>`response_body <> ''`)
    .where('started_at', '<', cutoff)
    .orderBy('started_at')
    .limit(limit);
}

/** Empties the stored response bodies of at most `limit` attempts started before `cutoff` (one batch of result retention). */
export async function clearAttemptBodiesBefore(db: Db, cutoff: string, limit: number): Promise<number> {
  const result = await db
    .updateTable('webhook_attempts')
    .set({ response_body: '', response_body_truncated: 0 })
    .where('id', 'in', attemptsWithBodiesBefore(db, cutoff, limit))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Deletes at most `limit` deliveries of an endpoint with their attempts, in one transaction (one
 * batch of an endpoint's deletion); returns how many deliveries went.
 */
export async function deleteEndpointDeliveries(db: Db, endpointId: string, limit: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const ids = (
      await trx
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('endpoint_id', '=', endpointId)
        .limit(limit)
        .execute()
    ).map((row) => row.id);
    if (ids.length === 0) return 0;
    await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
    await trx.deleteFrom('webhook_deliveries').where('id', 'in', ids).execute();
    return ids.length;
  });
}

/** One batch of event retention: what it looked at and what it deleted. */
export interface EventBatch {
  /** Events looked at (deleted or kept because a delivery is still due). */
  seen: number;
  deleted: number;
  /** The last event id looked at: the next batch starts after it. */
  lastId: string | null;
}

/**
 * Event retention, one batch in one transaction: of the (at most `limit`) oldest events with an id
 * below `before` (an id boundary: events created before the cutoff) and above `after`, those none
 * of whose deliveries is pending or being sent are deleted, with their deliveries and attempts.
 * An event with a delivery still due is kept, and a later run looks at it again. On PostgreSQL the
 * deliveries are locked first, so that a manual retry racing with this batch either waits for it
 * (and finds the delivery gone) or has made it pending before (and the event stays).
 */
export async function deleteEventsBefore(
  db: Db,
  range: { before: string; after: string | null },
  limit: number,
): Promise<EventBatch> {
  return db.transaction().execute(async (trx) => {
    let candidates = trx.selectFrom('events').select('id').where('id', '<', range.before);
    if (range.after !== null) candidates = candidates.where('id', '>', range.after);
    const ids = (await candidates.orderBy('id').limit(limit).execute()).map((row) => row.id);
    if (ids.length === 0) return { seen: 0, deleted: 0, lastId: null };
    let deliveriesQuery = trx
      .selectFrom('webhook_deliveries')
      .select(['id', 'event_id', 'status'])
      .where('event_id', 'in', ids);
    if (capabilitiesOf(trx).skipLocked) deliveriesQuery = deliveriesQuery.forUpdate();
    const deliveries = await deliveriesQuery.execute();
    const kept = new Set(deliveries.filter((d) => !FINAL.has(d.status)).map((d) => d.event_id));
    const doomed = ids.filter((id) => !kept.has(id));
    const doomedDeliveries = deliveries.filter((d) => !kept.has(d.event_id)).map((d) => d.id);
    if (doomedDeliveries.length > 0) {
      await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', doomedDeliveries).execute();
      await trx.deleteFrom('webhook_deliveries').where('id', 'in', doomedDeliveries).execute();
    }
    if (doomed.length > 0) await trx.deleteFrom('events').where('id', 'in', doomed).execute();
    return { seen: ids.length, deleted: doomed.length, lastId: ids[ids.length - 1] };
  });
}
