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

/** Deletes at most `limit` of the stored responses created before `cutoff` (one batch); returns how many went. */
export async function purgeIdempotencyBefore(db: Db, cutoff: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where((eb) =>
      eb(
        eb.refTuple('scope', 'idempotency_key'),
        'in',
        eb
          .selectFrom('idempotency_keys')
          .select(['scope', 'idempotency_key'])
          .where('created_at', '<', cutoff)
          .orderBy('created_at')
          .limit(limit)
          .$asTuple('scope', 'idempotency_key'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Rewrites, through `redact`, the stored responses of these scopes created between `since` and
 * `until` that mention `needle` (a session id): a replayed response must not bring back what
 * redaction erased. Returns how many changed.
 */
export async function redactStoredResponses(
  db: Db,
  filter: { scopes: string[]; since: string; until: string; needle: string },
  redact: (body: string) => string,
): Promise<number> {
  const rows = await db
    .selectFrom('idempotency_keys')
    .select(['scope', 'idempotency_key', 'response_body'])
    .where('scope', 'in', filter.scopes)
    .where('created_at', '>=', filter.since)
    .where('created_at', '<=', filter.until)
    .where('response_body', 'is not', null)
    .execute();
  let changed = 0;
  for (const row of rows) {
    if (!row.response_body?.includes(filter.needle)) continue;
    const body = redact(row.response_body);
    if (body === row.response_body) continue;
    await db
      .updateTable('idempotency_keys')
      .set({ response_body: body })
      .where('scope', '=', row.scope)
      .where('idempotency_key', '=', row.idempotency_key)
      .execute();
    changed++;
  }
  return changed;
}
