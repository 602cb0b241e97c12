import type { SessionResult } from '../domain/session.ts';
import type { Db } from './db.ts';

/**
 * Same-device OpenID4VP answers judged and waiting for the wallet's redirect (migration 0013):
 * one per session, the latest answer replacing an earlier one.
 */
export async function holdResult(db: Db, sessionId: string, result: SessionResult, at: string): Promise<void> {
  const json = JSON.stringify(result);
  await db
    .insertInto('openid4vp_held_results')
    .values({ session_id: sessionId, result: json, held_at: at })
    .onConflict((oc) => oc.column('session_id').doUpdateSet({ result: json, held_at: at }))
    .execute();
}

export async function findHeldResult(db: Db, sessionId: string): Promise<SessionResult | undefined> {
  const row = await db
    .selectFrom('openid4vp_held_results')
    .select('result')
    .where('session_id', '=', sessionId)
    .executeTakeFirst();
  return row ? (JSON.parse(row.result) as SessionResult) : undefined;
}

export async function deleteHeldResult(db: Db, sessionId: string): Promise<void> {
  await db.deleteFrom('openid4vp_held_results').where('session_id', '=', sessionId).execute();
}

/** {@link deleteHeldResult} of several sessions in one statement. */
export async function deleteHeldResults(db: Db, sessionIds: readonly string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await db.deleteFrom('openid4vp_held_results').where('session_id', 'in', sessionIds).execute();
}
