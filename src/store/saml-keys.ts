import type { Db } from './db.ts';

/** A key pair and self-signed certificate the service generated (its SAML SP keys, the sandbox IdP's). */
export interface StoredKeyPair {
  name: string;
  privateKeyPem: string;
  certificatePem: string;
  createdAt: string;
}

/**
 * The key pair stored under `name`, or `generated` stored now: of two processes generating at
 * once, both end up with the first one written.
 */
export async function keyPairOnce(
  db: Db,
  name: string,
  generate: () => Promise<StoredKeyPair>,
): Promise<StoredKeyPair> {
  const find = () => db.selectFrom('saml_keys').selectAll().where('name', '=', name).executeTakeFirst();
  let row = await find();
  if (!row) {
    const key = await generate();
    await db
      .insertInto('saml_keys')
      .values({
        name,
        private_key_pem: key.privateKeyPem,
        certificate_pem: key.certificatePem,
        created_at: key.createdAt,
      })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    row = (await find())!;
  }
  return {
    name: row.name,
    privateKeyPem: row.private_key_pem,
    certificatePem: row.certificate_pem,
    createdAt: row.created_at,
  };
}
