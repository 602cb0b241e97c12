import { idBoundaryAt } from '../domain/ids.ts';
import type { Db } from './db.ts';

/** One UTC day of an application's sessions: how many were created and how far they got. */
export interface FunnelDay {
  day: string;
  created: number;
  consented: number;
  verified: number;
  notVerified: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The day's sessions, counted over the application's index (app_id, id): session ids begin with
 * their creation time, so a day is a range of ids and no other session is read.
 */
async function countDay(db: Db, appId: string, day: string): Promise<FunnelDay> {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  const row = await db
    .selectFrom('sessions')
    .select((eb) => [
      eb.fn.countAll<number>().as('created'),
      eb.fn.sum<number>(eb.case().when('consented_at', 'is not', null).then(1).else(0).end()).as('consented'),
      eb.fn
        .sum<number>(
          eb
            .case()
            .when(eb.and([eb('status', '=', 'completed'), eb('verified', '=', 1)]))
            .then(1)
            .else(0)
            .end(),
        )
        .as('verified'),
      eb.fn
        .sum<number>(
          eb
            .case()
            .when(eb.and([eb('status', '=', 'completed'), eb('verified', '=', 0)]))
            .then(1)
            .else(0)
            .end(),
        )
        .as('not_verified'),
    ])
    .where('app_id', '=', appId)
    .where('id', '>=', idBoundaryAt('session', new Date(start)))
    .where('id', '<', idBoundaryAt('session', new Date(start + DAY_MS)))
    .executeTakeFirstOrThrow();
  return {
    day,
    created: Number(row.created ?? 0),
    consented: Number(row.consented ?? 0),
    verified: Number(row.verified ?? 0),
    notVerified: Number(row.not_verified ?? 0),
  };
}

/**
 * The funnel of `days` (YYYY-MM-DD). A day before `closedBefore` can change no more (all its
 * sessions have ended): it is counted once and kept in session_funnel_daily, so the dashboard
 * reads one row per past day however many sessions the application has; the open days are
 * counted from their own range of the index.
 */
export async function funnelDays(db: Db, appId: string, days: string[], closedBefore: string): Promise<FunnelDay[]> {
  const stored = new Map<string, FunnelDay>();
  if (days.length > 0) {
    const rows = await db
      .selectFrom('session_funnel_daily')
      .selectAll()
      .where('app_id', '=', appId)
      .where('day', 'in', days)
      .execute();
    for (const row of rows)
      stored.set(row.day, {
        day: row.day,
        created: Number(row.created),
        consented: Number(row.consented),
        verified: Number(row.verified),
        notVerified: Number(row.not_verified),
      });
  }
  const out: FunnelDay[] = [];
  for (const day of days) {
    const known = stored.get(day);
    if (known) {
      out.push(known);
      continue;
    }
    const counted = await countDay(db, appId, day);
    if (day < closedBefore)
      await db
        .insertInto('session_funnel_daily')
        .values({
          app_id: appId,
          day,
          created: counted.created,
          consented: counted.consented,
          verified: counted.verified,
          not_verified: counted.notVerified,
        })
        .onConflict((oc) => oc.columns(['app_id', 'day']).doNothing())
        .execute();
    out.push(counted);
  }
  return out;
}
