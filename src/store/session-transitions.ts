import { sql } from 'kysely';
import type { SessionResult } from '../domain/session.ts';
import { statusesLeadingTo, type SessionStatus } from '../domain/session-state.ts';
import type { Db } from './db.ts';
import { storedResultJson } from './sessions.ts';

/**
 * How a stored session moves from one state to another: the conditional UPDATE of one move (alone,
 * or as a part of a larger statement), the sweeper's expiry of many, and the count of rejected
 * presentations. The states and the moves between them are domain/session-state.ts.
 */
export interface Transition {
  to: SessionStatus;
  at: string;
  /** Open sessions must still be open at `at` to move (anything but expiry itself). */
  requireUnexpired: boolean;
  result?: SessionResult;
}

/** The values of a {@link Transition}'s UPDATE, as one statement with the same text for every move takes them. */
export type TransitionValues = {
  sessionId: string;
  to: SessionStatus;
  /** The states it may move from (domain/session-state.ts statusesLeadingTo). */
  from: SessionStatus[];
  at: string;
  requireUnexpired: boolean;
  /** Set on the move that sets them (consent, completion); null leaves the stored value. */
  consentedAt: string | null;
  completedAt: string | null;
  result: string | null;
  verified: number | null;
};

export function transitionValuesOf(id: string, t: Transition): TransitionValues {
  return {
    sessionId: id,
    to: t.to,
    from: statusesLeadingTo(t.to),
    at: t.at,
    requireUnexpired: t.requireUnexpired,
    consentedAt: t.to === 'consented' ? t.at : null,
    completedAt: t.to === 'completed' ? t.at : null,
    result: t.result ? storedResultJson(t.result) : null,
    verified: t.result ? (t.result.verified ? 1 : 0) : null,
  };
}

/**
 * {@link transitionSession}'s conditional UPDATE as a part of a larger statement (PostgreSQL: a
 * WITH part named by the caller), returning the id of the session it moved, if it moved one. Its
 * text is the same for every transition.
 */
export function transitionUpdateSql(p: TransitionValues) {
  return sql<{ id: string }>`update sessions set status = ${p.to}, updated_at = ${p.at},
      consented_at = coalesce(${p.consentedAt}, consented_at), completed_at = coalesce(${p.completedAt}, completed_at),
      result = coalesce(${p.result}, result), verified = coalesce(${p.verified}::integer, verified)
    where id = ${p.sessionId} and status = any(${p.from}::text[])
      and (not ${p.requireUnexpired}::boolean or expires_at > ${p.at})
    returning id`;
}

/**
 * Moves a session only if its current state allows it (the transition table) — a conditional
 * UPDATE, so of two racing requests exactly one wins. Returns whether this call moved it.
 */
export async function transitionSession(db: Db, id: string, t: Transition): Promise<boolean> {
  let query = db
    .updateTable('sessions')
    .set({
      status: t.to,
      updated_at: t.at,
      ...(t.to === 'consented' ? { consented_at: t.at } : {}),
      ...(t.to === 'completed' ? { completed_at: t.at } : {}),
      ...(t.result ? { result: storedResultJson(t.result), verified: t.result.verified ? 1 : 0 } : {}),
    })
    .where('id', '=', id)
    .where('status', 'in', statusesLeadingTo(t.to));
  if (t.requireUnexpired) query = query.where('expires_at', '>', t.at);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Expires those of `ids` that are still open and past their expiry at `at`, in one statement;
 * returns the ids it moved (a session another process moved first is not among them).
 *
 * The deadline is part of the condition, not only of the query that found the ids: it keeps the
 * statement's cost that of the due sessions whichever index PostgreSQL reads. Planned from
 * statistics that counted fewer open sessions than there are, it read the ids through the
 * partial index of open sessions (`sessions_open_due`, migration 0022) rather than the primary
 * key, every open session of the installation filtered for ten ids: 7,700 rows and 10 ms at 1M
 * sessions in bench/scale.ts, row locks and counter rows held meanwhile. With the deadline that
 * index is read only as far as the due ones.
 */
export async function expireSessions(db: Db, ids: readonly string[], at: string): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await expireSessionsQuery(db, ids, at).execute();
  return new Set(rows.map((row) => row.id));
}

/** The statement of {@link expireSessions} (`ids` not empty). */
export function expireSessionsQuery(db: Db, ids: readonly string[], at: string) {
  return db
    .updateTable('sessions')
    .set({ status: 'expired', updated_at: at })
    .where('id', 'in', ids)
    .where('status', 'in', statusesLeadingTo('expired'))
    .where('expires_at', '<=', at)
    .returning('id');
}

/** Counts one rejected presentation of a consented, unexpired session; returns the new count, or undefined if not open. */
export async function recordFailedAttempt(db: Db, id: string, at: string): Promise<number | undefined> {
  const row = await db
    .updateTable('sessions')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1), updated_at: at }))
    .where('id', '=', id)
    .where('status', '=', 'consented')
    .where('expires_at', '>', at)
    .returning('failed_attempts')
    .executeTakeFirst();
  return row ? Number(row.failed_attempts) : undefined;
}
