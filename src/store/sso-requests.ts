import type { Db } from './db.ts';

/** A login request sent to an identity provider, waiting for its answer. */
export interface SsoRequest {
  requestId: string;
  sessionId: string;
  browserHash: string;
  idpId: string;
  createdAt: string;
  expiresAt: string;
}

/**
 * Records `request` as the one outstanding login of its session in its browser: an earlier one
 * of the same session and browser is dropped (its answer will find nothing to answer).
 */
export async function replaceSsoRequest(db: Db, request: SsoRequest): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom('sso_requests')
      .where('session_id', '=', request.sessionId)
      .where('browser_hash', '=', request.browserHash)
      .execute();
    await trx
      .insertInto('sso_requests')
      .values({
        request_id: request.requestId,
        session_id: request.sessionId,
        browser_hash: request.browserHash,
        idp_id: request.idpId,
        created_at: request.createdAt,
        expires_at: request.expiresAt,
      })
      .execute();
  });
}

export async function findSsoRequest(db: Db, requestId: string): Promise<SsoRequest | undefined> {
  const row = await db.selectFrom('sso_requests').selectAll().where('request_id', '=', requestId).executeTakeFirst();
  return (
    row && {
      requestId: row.request_id,
      sessionId: row.session_id,
      browserHash: row.browser_hash,
      idpId: row.idp_id,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
    }
  );
}

/**
 * Records an accepted assertion (or ID token) id of `issuer` until `expiresAt`. False when it was
 * accepted before: of two racing posts of one response exactly one gets true.
 */
export async function spendAssertion(
  db: Db,
  spent: { issuer: string; assertionId: string; expiresAt: string },
): Promise<boolean> {
  const result = await db
    .insertInto('sso_spent_assertions')
    .values({ issuer: spent.issuer, assertion_id: spent.assertionId, expires_at: spent.expiresAt })
    .onConflict((oc) => oc.columns(['issuer', 'assertion_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

/** Drops the requests and spent assertion ids that expired before `now`; how many went. */
export async function purgeExpiredSsoRows(db: Db, now: string): Promise<number> {
  const requests = await db.deleteFrom('sso_requests').where('expires_at', '<', now).executeTakeFirst();
  const spent = await db.deleteFrom('sso_spent_assertions').where('expires_at', '<', now).executeTakeFirst();
  return Number(requests.numDeletedRows) + Number(spent.numDeletedRows);
}
