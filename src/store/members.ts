import type { Selectable } from 'kysely';
import type { MemberRole } from '../domain/members.ts';
import type { Db } from './db.ts';
import type { MemberInvitationsTable, MembersTable } from './schema.ts';

/** A member of an organization (migration 0014): who may sign in to the dashboard. */
export interface Member {
  id: string;
  orgId: string;
  email: string;
  role: MemberRole;
  createdAt: string;
}

export interface Invitation {
  id: string;
  orgId: string;
  email: string;
  role: MemberRole;
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
  acceptedAt: string | null;
}

function toMember(row: Selectable<MembersTable>): Member {
  return { id: row.id, orgId: row.org_id, email: row.email, role: row.role as MemberRole, createdAt: row.created_at };
}

function toInvitation(row: Selectable<MemberInvitationsTable>): Invitation {
  return {
    id: row.id,
    orgId: row.org_id,
    email: row.email,
    role: row.role as MemberRole,
    invitedBy: row.invited_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    acceptedAt: row.accepted_at,
  };
}

export async function insertMember(db: Db, member: Member, passwordHash: string | null): Promise<void> {
  await db
    .insertInto('members')
    .values({
      id: member.id,
      org_id: member.orgId,
      email: member.email,
      role: member.role,
      password_hash: passwordHash,
      created_at: member.createdAt,
      updated_at: member.createdAt,
    })
    .execute();
}

/** The member with this (normalized) address and its password hash, if any. */
export async function findMemberByEmail(
  db: Db,
  email: string,
): Promise<{ member: Member; passwordHash: string | null } | undefined> {
  const row = await db.selectFrom('members').selectAll().where('email', '=', email).executeTakeFirst();
  return row && { member: toMember(row), passwordHash: row.password_hash };
}

export async function findMember(db: Db, id: string): Promise<Member | undefined> {
  const row = await db.selectFrom('members').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toMember(row);
}

export async function listMembers(db: Db, orgId: string): Promise<Member[]> {
  const rows = await db.selectFrom('members').selectAll().where('org_id', '=', orgId).orderBy('id').execute();
  return rows.map(toMember);
}

export async function countOwners(db: Db, orgId: string): Promise<number> {
  const row = await db
    .selectFrom('members')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('org_id', '=', orgId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function deleteMember(db: Db, orgId: string, id: string): Promise<boolean> {
  const deleted = await db.deleteFrom('members').where('id', '=', id).where('org_id', '=', orgId).executeTakeFirst();
  return Number(deleted.numDeletedRows) === 1;
}

export async function insertInvitation(db: Db, invitation: Invitation, tokenHash: string): Promise<void> {
  await db
    .insertInto('member_invitations')
    .values({
      id: invitation.id,
      org_id: invitation.orgId,
      email: invitation.email,
      role: invitation.role,
      token_hash: tokenHash,
      invited_by: invitation.invitedBy,
      created_at: invitation.createdAt,
      expires_at: invitation.expiresAt,
      accepted_at: null,
    })
    .execute();
}

export async function findInvitationByTokenHash(db: Db, tokenHash: string): Promise<Invitation | undefined> {
  const row = await db
    .selectFrom('member_invitations')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  return row && toInvitation(row);
}

/** Marks an open invitation accepted; false when it was taken already or has expired (of two, one wins). */
export async function acceptInvitationRow(db: Db, id: string, at: string): Promise<boolean> {
  const updated = await db
    .updateTable('member_invitations')
    .set({ accepted_at: at })
    .where('id', '=', id)
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', at)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
}

export async function listOpenInvitations(db: Db, orgId: string, now: string): Promise<Invitation[]> {
  const rows = await db
    .selectFrom('member_invitations')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('id', 'desc')
    .execute();
  return rows.map(toInvitation);
}
