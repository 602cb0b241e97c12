import { OPEN_STATUSES } from '../domain/session-state.ts';
import type { Db } from './db.ts';

/** Session counts of one application, by outcome. */
export interface ApplicationMetrics {
  sessions: {
    total: number;
    pending: number;
    consented: number;
    verified: number;
    notVerified: number;
    expired: number;
    cancelled: number;
    declined: number;
  };
}

/**
 * Counts by outcome; open sessions past their expiry count as expired, as they read.
 *
 * The stored counts come from session_counts (migration 0021: a few rows per application, kept by
 * triggers in the transaction of each change). Only the open sessions whose expiry has passed but
 * which the sweeper has not yet marked expired are read from `sessions`, over the index by
 * (app_id, status): at most the application's open sessions, however long its history.
 */
export async function applicationMetrics(db: Db, appId: string, now: Date): Promise<ApplicationMetrics> {
  const stored = await db
    .selectFrom('session_counts')
    .select((eb) => [
      eb.fn.sum<number>('pending').as('pending'),
      eb.fn.sum<number>('consented').as('consented'),
      eb.fn.sum<number>('verified').as('verified'),
      eb.fn.sum<number>('not_verified').as('not_verified'),
      eb.fn.sum<number>('expired').as('expired'),
      eb.fn.sum<number>('cancelled').as('cancelled'),
      eb.fn.sum<number>('declined').as('declined'),
    ])
    .where('app_id', '=', appId)
    .executeTakeFirstOrThrow();
  const lapsed = await db
    .selectFrom('sessions')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where('app_id', '=', appId)
    .where('status', 'in', [...OPEN_STATUSES])
    .where('expires_at', '<=', now.toISOString())
    .groupBy('status')
    .execute();
  const sessions = {
    total: 0,
    pending: Number(stored.pending ?? 0),
    consented: Number(stored.consented ?? 0),
    verified: Number(stored.verified ?? 0),
    notVerified: Number(stored.not_verified ?? 0),
    expired: Number(stored.expired ?? 0),
    cancelled: Number(stored.cancelled ?? 0),
    declined: Number(stored.declined ?? 0),
  };
  for (const row of lapsed) {
    const n = Number(row.n);
    if (row.status === 'pending') sessions.pending -= n;
    else sessions.consented -= n;
    sessions.expired += n;
  }
  sessions.total =
    sessions.pending +
    sessions.consented +
    sessions.verified +
    sessions.notVerified +
    sessions.expired +
    sessions.cancelled +
    sessions.declined;
  return { sessions };
}
