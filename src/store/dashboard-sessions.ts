import type { Environment } from '../domain/environment.ts';
import type { MemberRole } from '../domain/members.ts';
import type { Db } from './db.ts';
import type { Member } from './members.ts';

/** A signed-in member's cookie session, found by the hash of its token. */
export interface DashboardSession {
  tokenHash: string;
  member: Member;
  environment: Environment;
  expiresAt: string;
}

export async function insertDashboardSession(
  db: Db,
  s: { tokenHash: string; memberId: string; environment: Environment; createdAt: string; expiresAt: string },
): Promise<void> {
  await db
    .insertInto('dashboard_sessions')
    .values({
      token_hash: s.tokenHash,
      member_id: s.memberId,
      environment: s.environment,
      created_at: s.createdAt,
      expires_at: s.expiresAt,
    })
    .execute();
}

/** The unexpired session of this token hash and its member, in one query. */
export async function findDashboardSession(
  db: Db,
  tokenHash: string,
  now: string,
): Promise<DashboardSession | undefined> {
  const row = await db
    .selectFrom('dashboard_sessions')
    .innerJoin('members', 'members.id', 'dashboard_sessions.member_id')
    .select([
      'dashboard_sessions.token_hash',
      'dashboard_sessions.environment',
      'dashboard_sessions.expires_at',
      'members.id',
      'members.org_id',
      'members.email',
      'members.role',
      'members.created_at',
    ])
    .where('dashboard_sessions.token_hash', '=', tokenHash)
    .where('dashboard_sessions.expires_at', '>', now)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    tokenHash: row.token_hash,
    environment: row.environment,
    expiresAt: row.expires_at,
    member: {
      id: row.id,
      orgId: row.org_id,
      email: row.email,
      role: row.role as MemberRole,
      createdAt: row.created_at,
    },
  };
}

export async function setDashboardEnvironment(db: Db, tokenHash: string, environment: Environment): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ environment }).where('token_hash', '=', tokenHash).execute();
}

export async function deleteDashboardSession(db: Db, tokenHash: string): Promise<void> {
  await db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash).execute();
}

/** Signs a member out everywhere (removed from the organization). */
export async function deleteSessionsOfMember(db: Db, memberId: string): Promise<void> {
  await db.deleteFrom('dashboard_sessions').where('member_id', '=', memberId).execute();
}

/** Deletes the expired sign-ins and passkey challenges; returns how many rows went. */
export async function purgeExpiredSignIns(db: Db, now: string): Promise<number> {
  const sessions = await db.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).executeTakeFirst();
  const challenges = await db.deleteFrom('webauthn_challenges').where('expires_at', '<=', now).executeTakeFirst();
  return Number(sessions.numDeletedRows) + Number(challenges.numDeletedRows);
}
