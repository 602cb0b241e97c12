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

/** Counts by outcome; open sessions past their expiry count as expired, as they read. */
export async function applicationMetrics(db: Db, appId: string, now: Date): Promise<ApplicationMetrics> {
  const nowIso = now.toISOString();
  const rows = await db
    .selectFrom('sessions')
    .select((eb) => [
      'status',
      eb
        .case()
        .when('status', 'in', ['pending', 'consented'])
        .then(eb.case().when('expires_at', '<=', nowIso).then(1).else(0).end())
        .else(0)
        .end()
        .as('lapsed'),
      eb.fn.coalesce('verified', eb.lit(0)).as('verified'),
      eb.fn.countAll<number>().as('n'),
    ])
    .where('app_id', '=', appId)
    .groupBy(['status', 'lapsed', 'verified'])
    .execute();
  const sessions = {
    total: 0,
    pending: 0,
    consented: 0,
    verified: 0,
    notVerified: 0,
    expired: 0,
    cancelled: 0,
    declined: 0,
  };
  for (const row of rows) {
    const n = Number(row.n);
    sessions.total += n;
    if (Number(row.lapsed) === 1) sessions.expired += n;
    else if (row.status === 'completed')
      Number(row.verified) === 1 ? (sessions.verified += n) : (sessions.notVerified += n);
    else sessions[row.status] += n;
  }
  return { sessions };
}
