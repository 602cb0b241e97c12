import type { Db } from '../db.ts';

/**
 * The leases of claimed deliveries after the claim (claim.ts): a live worker's heartbeat extends
 * them, and a stopping worker gives back those it never sent.
 */

/**
 * The heartbeat of a live worker: extends to `leaseUntil` the lease of every delivery still
 * `sending` under one of its claim `tokens`. A delivery another worker has claimed since carries
 * that worker's token and is left alone; one already recorded has no token.
 * @returns how many leases were extended.
 */
export async function renewLeases(db: Db, tokens: string[], leaseUntil: string, now: string): Promise<number> {
  if (tokens.length === 0) return 0;
  // A transaction for SQLite's BEGIN IMMEDIATE, as in claimDueDeliveries: a heartbeat must wait
  // for the lock, not fail.
  const updated = await db
    .transaction()
    .execute((trx) =>
      trx
        .updateTable('webhook_deliveries')
        .set({ due_at: leaseUntil, updated_at: now })
        .where('status', '=', 'sending')
        .where('lease_token', 'in', tokens)
        .executeTakeFirst(),
    );
  return Number(updated.numUpdatedRows);
}

/**
 * Gives back deliveries a stopping worker claimed and never sent (claimed ahead, waiting for a send
 * of their endpoint to end): each is pending and due at `now` again, unleased, with the attempt
 * its claim counted taken back, so that another worker sends it at once rather than once its lease
 * runs out. Only a delivery still `sending` under the given claim token is given back.
 * @returns how many were given back.
 */
export async function giveBackUnsent(
  db: Db,
  deliveries: readonly { id: string; leaseToken: string }[],
  now: string,
): Promise<number> {
  if (deliveries.length === 0) return 0;
  // A transaction for SQLite's BEGIN IMMEDIATE, as in renewLeases.
  const updated = await db.transaction().execute((trx) =>
    trx
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        status: 'pending',
        due_at: now,
        lease_token: null,
        attempt_count: eb('attempt_count', '-', 1),
        updated_at: now,
      }))
      .where('status', '=', 'sending')
      .where((eb) => eb.or(deliveries.map((d) => eb.and([eb('id', '=', d.id), eb('lease_token', '=', d.leaseToken)]))))
      .executeTakeFirst(),
  );
  return Number(updated.numUpdatedRows);
}
