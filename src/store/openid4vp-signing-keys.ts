import type { Db } from './db.ts';

export interface StoredSigningKey {
  host: string;
  privateKeyPem: string;
  certificatePem: string;
  createdAt: string;
}

/** The signing key generated for `host`, if any. */
export async function findSigningKey(db: Db, host: string): Promise<StoredSigningKey | undefined> {
  const row = await db.selectFrom('openid4vp_signing_keys').selectAll().where('host', '=', host).executeTakeFirst();
  return (
    row && {
      host: row.host,
      privateKeyPem: row.private_key_pem,
      certificatePem: row.certificate_pem,
      createdAt: row.created_at,
    }
  );
}

/**
 * Stores a generated key unless one exists for the host, and returns the one that is stored: of
 * two processes generating at once, both end up with the first one written.
 */
export async function insertSigningKeyOnce(db: Db, key: StoredSigningKey): Promise<StoredSigningKey> {
  await db
    .insertInto('openid4vp_signing_keys')
    .values({
      host: key.host,
      private_key_pem: key.privateKeyPem,
      certificate_pem: key.certificatePem,
      created_at: key.createdAt,
    })
    .onConflict((oc) => oc.column('host').doNothing())
    .execute();
  return (await findSigningKey(db, key.host))!;
}
