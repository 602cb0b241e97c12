import type { CredentialProfile } from '../domain/credential-profiles.ts';
import type { Db } from './db.ts';

/** A profile row: its definition as stored (JSON, unchecked) and when it was added. */
export interface StoredProfileRow {
  id: string;
  definition: unknown;
  createdAt: string;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Adds a profile; false when one with its id is already stored. */
export async function insertProfile(db: Db, profile: CredentialProfile, createdAt: string): Promise<boolean> {
  const result = await db
    .insertInto('credential_profiles')
    .values({ id: profile.id, definition: JSON.stringify(profile), created_at: createdAt })
    .onConflict((oc) => oc.column('id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

export async function listProfiles(db: Db): Promise<StoredProfileRow[]> {
  const rows = await db.selectFrom('credential_profiles').selectAll().orderBy('id').execute();
  return rows.map((row) => ({ id: row.id, definition: parsed(row.definition), createdAt: row.created_at }));
}

export async function deleteProfile(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('credential_profiles').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}
