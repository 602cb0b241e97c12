import type { Db } from './db.ts';

/**
 * Records `nonceHash` as spent by `orgId` until `expiresAt`. False when it was spent already
 * (a row exists, purged or not yet): of two racing requests exactly one gets true.
 */
export async function spendNonce(
  db: Db,
  spent: { orgId: string; nonceHash: string; spentAt: string; expiresAt: string },
): Promise<boolean> {
  const result = await db
    .insertInto('spent_nonces')
    .values({ org_id: spent.orgId, nonce_hash: spent.nonceHash, spent_at: spent.spentAt, expires_at: spent.expiresAt })
    .onConflict((oc) => oc.columns(['org_id', 'nonce_hash']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

/**
 * In one round trip: whether `nonce` is the challenge of a session (of any organization), and
 * whether `orgId` has spent it (`nonceHash`). A cheap check before any verifier runs; the insert
 * of {@link spendNonce} remains what decides between racing requests.
 */
export async function nonceStanding(
  db: Db,
  orgId: string,
  nonce: string,
  nonceHash: string,
): Promise<{ sessionNonce: boolean; spent: boolean }> {
  const row = await db
    .selectNoFrom((eb) => [
      eb.exists(eb.selectFrom('sessions').select('id').where('challenge_nonce', '=', nonce)).as('session_nonce'),
      eb
        .exists(
          eb
            .selectFrom('spent_nonces')
            .select('org_id')
            .where('org_id', '=', orgId)
            .where('nonce_hash', '=', nonceHash),
        )
        .as('spent'),
    ])
    .executeTakeFirstOrThrow();
  // SQLite answers 0/1, PostgreSQL true/false.
  return { sessionNonce: Boolean(row.session_nonce), spent: Boolean(row.spent) };
}

/** The DELETE of one purge batch: at most `limit` of the rows that expired before `now`. */
export function spentNoncesPurgeBatch(db: Db, now: string, limit: number) {
  return db
    .deleteFrom('spent_nonces')
    .where((eb) =>
      eb(
        eb.refTuple('org_id', 'nonce_hash'),
        'in',
        eb
          .selectFrom('spent_nonces')
          .select(['org_id', 'nonce_hash'])
          .where('expires_at', '<', now)
          .orderBy('expires_at')
          .limit(limit)
          .$asTuple('org_id', 'nonce_hash'),
      ),
    );
}

/** Deletes at most `limit` of the rows that expired before `now` (one batch); returns how many went. */
export async function purgeSpentNoncesBefore(db: Db, now: string, limit: number): Promise<number> {
  const result = await spentNoncesPurgeBatch(db, now, limit).executeTakeFirst();
  return Number(result.numDeletedRows);
}
