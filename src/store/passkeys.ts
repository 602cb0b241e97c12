import type { AuthenticatorTransportFuture } from '@simplewebauthn/server';
import type { Db } from './db.ts';

/** A member's passkey: the credential id and public key its authenticator registered. */
export interface Passkey {
  id: string;
  memberId: string;
  /** COSE public key, base64url. */
  publicKey: string;
  counter: number;
  transports: AuthenticatorTransportFuture[];
  createdAt: string;
}

export async function insertPasskey(db: Db, p: Passkey): Promise<void> {
  await db
    .insertInto('member_passkeys')
    .values({
      id: p.id,
      member_id: p.memberId,
      public_key: p.publicKey,
      counter: p.counter,
      transports: JSON.stringify(p.transports),
      created_at: p.createdAt,
      last_used_at: null,
    })
    .execute();
}

type Row = {
  id: string;
  member_id: string;
  public_key: string;
  counter: number | string;
  transports: string | null;
  created_at: string;
};
const toPasskey = (row: Row): Passkey => ({
  id: row.id,
  memberId: row.member_id,
  publicKey: row.public_key,
  counter: Number(row.counter),
  transports: row.transports ? (JSON.parse(row.transports) as AuthenticatorTransportFuture[]) : [],
  createdAt: row.created_at,
});

export async function findPasskey(db: Db, id: string): Promise<Passkey | undefined> {
  const row = await db.selectFrom('member_passkeys').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toPasskey(row);
}

export async function passkeysOf(db: Db, memberId: string): Promise<Passkey[]> {
  const rows = await db.selectFrom('member_passkeys').selectAll().where('member_id', '=', memberId).execute();
  return rows.map(toPasskey);
}

export async function recordPasskeyUse(db: Db, id: string, counter: number, at: string): Promise<void> {
  await db.updateTable('member_passkeys').set({ counter, last_used_at: at }).where('id', '=', id).execute();
}

export async function insertChallenge(
  db: Db,
  c: { id: string; challenge: string; memberId: string | null; expiresAt: string },
): Promise<void> {
  await db
    .insertInto('webauthn_challenges')
    .values({ id: c.id, challenge: c.challenge, member_id: c.memberId, expires_at: c.expiresAt })
    .execute();
}

/** Takes a challenge once: deleted as it is read, so a replayed answer finds none. */
export async function takeChallenge(
  db: Db,
  id: string,
  now: string,
): Promise<{ challenge: string; memberId: string | null } | undefined> {
  const row = await db
    .deleteFrom('webauthn_challenges')
    .where('id', '=', id)
    .returning(['challenge', 'member_id', 'expires_at'])
    .executeTakeFirst();
  if (!row || row.expires_at <= now) return undefined;
  return { challenge: row.challenge, memberId: row.member_id };
}
