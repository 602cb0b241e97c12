import type { Db } from './db.ts';

export type IdempotencyRecord =
  | { state: 'in_progress'; fingerprint: string }
  | { state: 'completed'; fingerprint: string; statusCode: number; body: string };

/** Claims the key for a first request; false when the key already exists (see {@link findIdempotency}). */
export async function claimIdempotencyKey(
  db: Db,
  scope: string,
  key: string,
  fingerprint: string,
  now: string,
): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values({ scope, idempotency_key: key, fingerprint, status_code: null, response_body: null, created_at: now })
    .onConflict((oc) => oc.columns(['scope', 'idempotency_key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

export async function findIdempotency(db: Db, scope: string, key: string): Promise<IdempotencyRecord | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('scope', '=', scope)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.status_code === null || row.response_body === null)
    return { state: 'in_progress', fingerprint: row.fingerprint };
  return { state: 'completed', fingerprint: row.fingerprint, statusCode: row.status_code, body: row.response_body };
}

export async function completeIdempotency(
  db: Db,
  scope: string,
  key: string,
  statusCode: number,
  body: string,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ status_code: statusCode, response_body: body })
    .where('scope', '=', scope)
    .where('idempotency_key', '=', key)
    .execute();
}

/** Forgets a key whose request failed on our side, so the client may retry it. */
export async function releaseIdempotency(db: Db, scope: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('scope', '=', scope).where('idempotency_key', '=', key).execute();
}

export async function purgeIdempotencyBefore(db: Db, cutoff: string): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('created_at', '<', cutoff).executeTakeFirst();
  return Number(result.numDeletedRows);
}
