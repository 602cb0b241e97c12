import type { Db } from '../db.ts';

/**
 * What is kept of the attempts: their stored response bodies are emptied by redaction (one
 * session's) and by result retention (those older than a cutoff).
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

/** Empties the stored response bodies of attempts started before `cutoff` (result retention). */
export async function clearAttemptBodiesBefore(db: Db, cutoff: string): Promise<number> {
  const result = await db
    .updateTable('webhook_attempts')
    .set({ response_body: '', response_body_truncated: 0 })
    .where('started_at', '<', cutoff)
    .where('response_body', '<>', '')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
