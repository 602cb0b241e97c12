import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import type { Environment } from '../domain/environment.ts';
import { newId } from '../domain/ids.ts';
import {
  isEmail,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  normalizedEmail,
  type MemberRole,
} from '../domain/members.ts';
import type { Principal } from '../domain/principal.ts';
import { ApiError, invalidRequest, invalidState, notFound } from '../errors.ts';
import { insertAuditEntry, listAuditEntries } from '../store/audit-log.ts';
import {
  deleteDashboardSession,
  deleteSessionsOfMember,
  findDashboardSession,
  insertDashboardSession,
  purgeExpiredSignIns,
  setDashboardEnvironment,
  type DashboardSession,
} from '../store/dashboard-sessions.ts';
import type { Db } from '../store/db.ts';
import {
  acceptInvitationRow,
  countOwners,
  deleteMember,
  findInvitationByTokenHash,
  findMember,
  findMemberByEmail,
  insertInvitation,
  insertMember,
  listMembers,
  listOpenInvitations,
  type Invitation,
  type Member,
} from '../store/members.ts';
import { findOrganization } from '../store/organizations.ts';
import type { PageRequest } from '../store/pagination.ts';
import type { ServiceDeps } from './deps.ts';
import { createOrganization } from './organizations.ts';

/** How long an invitation link works. */
export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** How long a dashboard sign-in lasts. */
export const DASHBOARD_SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Who acts when the operator does (CLI, admin API). */
export const OPERATOR = 'operator';

type Deps = Pick<ServiceDeps, 'db' | 'clock'>;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const newToken = () => randomBytes(32).toString('base64url');

/** Appends to the organization's audit log: who did what to which resource. */
export async function audit(
  deps: Deps,
  entry: { orgId: string; actor: string; action: string; target?: string | null; environment?: string | null },
  db: Db = deps.db,
): Promise<void> {
  await insertAuditEntry(db, {
    id: newId('audit', deps.clock),
    orgId: entry.orgId,
    actor: entry.actor,
    action: entry.action,
    target: entry.target ?? null,
    environment: entry.environment ?? null,
    createdAt: deps.clock.now().toISOString(),
  });
}

export function auditLog(deps: Deps, orgId: string, page: PageRequest) {
  return listAuditEntries(deps.db, orgId, page);
}

/**
 * Invites someone to an organization: the operator (CLI, admin API) or an owner. Returns the
 * invitation and its one-time link; only the link's hash is stored.
 */
export async function inviteMember(
  deps: Deps & Pick<ServiceDeps, 'config'>,
  input: { orgId: string; email: string; role: MemberRole; actor: string },
): Promise<{ invitation: Invitation; url: string }> {
  const email = normalizedEmail(input.email);
  if (!isEmail(email)) throw invalidRequest('email must be an e-mail address.', 'email');
  const token = newToken();
  const now = deps.clock.now();
  const invitation: Invitation = {
    id: newId('invitation', deps.clock),
    orgId: input.orgId,
    email,
    role: input.role,
    invitedBy: input.actor,
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + INVITATION_TTL_MS).toISOString(),
    acceptedAt: null,
  };
  await deps.db.transaction().execute(async (trx) => {
    await insertInvitation(trx, invitation, sha256(token));
    await audit(deps, { orgId: input.orgId, actor: input.actor, action: 'member.invite', target: email }, trx);
  });
  return { invitation, url: `${deps.config.baseUrl}/dashboard/invitations/${token}` };
}

/**
 * Bootstrap in one step (`matricula org create --owner-email`, the admin API): an organization
 * with its first application and key, and the invitation of its first owner.
 */
export async function createOrganizationWithOwner(
  deps: Deps & Pick<ServiceDeps, 'config'>,
  input: { name: string; environment: Environment; ownerEmail: string },
) {
  if (!isEmail(normalizedEmail(input.ownerEmail)))
    throw invalidRequest('ownerEmail must be an e-mail address.', 'ownerEmail');
  const created = await createOrganization(deps, input);
  const owner = await inviteMember(deps, {
    orgId: created.organization.id,
    email: input.ownerEmail,
    role: 'owner',
    actor: OPERATOR,
  });
  return {
    ...created,
    ownerInvitation: {
      email: owner.invitation.email,
      role: owner.invitation.role,
      url: owner.url,
      expiresAt: owner.invitation.expiresAt,
    },
  };
}

/** The operator invites a member of an existing organization (CLI, admin API); 404 for no such organization. */
export async function operatorInvite(
  deps: Deps & Pick<ServiceDeps, 'config'>,
  input: { orgId: string; email: string; role: MemberRole },
) {
  if (!(await findOrganization(deps.db, input.orgId))) throw notFound('organization', 'orgId');
  const { invitation, url } = await inviteMember(deps, { ...input, actor: OPERATOR });
  return { email: invitation.email, role: invitation.role, url, expiresAt: invitation.expiresAt };
}

/** The open invitation behind a link, or a 404 (unknown, used or expired: the same answer). */
export async function openInvitation(deps: Deps, token: string): Promise<Invitation> {
  const invitation = await findInvitationByTokenHash(deps.db, sha256(token));
  if (!invitation || invitation.acceptedAt !== null || invitation.expiresAt <= deps.clock.now().toISOString())
    throw notFound('invitation');
  return invitation;
}

function checkedPassword(password: string): string {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH)
    throw invalidRequest(
      `The password must have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters.`,
      'password',
    );
  return password;
}

/** Accepts an invitation: the member is created with an argon2id hash of the chosen password. */
export async function acceptInvitation(deps: Deps, token: string, password: string): Promise<Member> {
  const invitation = await openInvitation(deps, token);
  const passwordHash = await hash(checkedPassword(password));
  const at = deps.clock.now().toISOString();
  const member: Member = {
    id: newId('member', deps.clock),
    orgId: invitation.orgId,
    email: invitation.email,
    role: invitation.role,
    createdAt: at,
  };
  return deps.db.transaction().execute(async (trx) => {
    if (!(await acceptInvitationRow(trx, invitation.id, at))) throw notFound('invitation');
    if (await findMemberByEmail(trx, member.email))
      throw invalidState(`${member.email} is a member already: sign in instead.`);
    await insertMember(trx, member, passwordHash);
    await audit(deps, { orgId: member.orgId, actor: member.id, action: 'member.join', target: member.email }, trx);
    return member;
  });
}

/** A hash of a password nobody knows: an unknown address costs the same time as a wrong password. */
let decoyHash: Promise<string> | undefined;

/** The member whose password this is, or undefined (unknown address or wrong password alike). */
export async function signInWithPassword(deps: Deps, email: string, password: string): Promise<Member | undefined> {
  const found = await findMemberByEmail(deps.db, normalizedEmail(email));
  decoyHash ??= hash(newToken());
  const stored = found?.passwordHash ?? (await decoyHash);
  const ok = password.length <= MAX_PASSWORD_LENGTH && (await verify(stored, password).catch(() => false));
  if (!ok || !found?.passwordHash) return undefined;
  await audit(deps, {
    orgId: found.member.orgId,
    actor: found.member.id,
    action: 'member.sign_in',
    target: 'password',
  });
  return found.member;
}

/** Starts a cookie session; returns its token (the cookie's value; only its hash is stored). */
export async function startDashboardSession(deps: Deps, member: Member): Promise<string> {
  const token = newToken();
  const now = deps.clock.now();
  await insertDashboardSession(deps.db, {
    tokenHash: sha256(token),
    memberId: member.id,
    environment: 'sandbox',
    createdAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + DASHBOARD_SESSION_TTL_MS).toISOString(),
  });
  return token;
}

export function dashboardSession(deps: Deps, token: string): Promise<DashboardSession | undefined> {
  return findDashboardSession(deps.db, sha256(token), deps.clock.now().toISOString());
}

/** The expired-rows job: dashboard sign-ins and passkey challenges past their end (they no longer work anyway). */
export function purgeExpiredDashboardSignIns(deps: Deps): Promise<number> {
  return purgeExpiredSignIns(deps.db, deps.clock.now().toISOString());
}

export async function signOut(deps: Deps, session: DashboardSession): Promise<void> {
  await deleteDashboardSession(deps.db, session.tokenHash);
  await audit(deps, { orgId: session.member.orgId, actor: session.member.id, action: 'member.sign_out' });
}

export async function switchEnvironment(deps: Deps, session: DashboardSession, environment: Environment) {
  await setDashboardEnvironment(deps.db, session.tokenHash, environment);
  await audit(deps, {
    orgId: session.member.orgId,
    actor: session.member.id,
    action: 'dashboard.environment',
    target: environment,
  });
}

/**
 * The CSRF token of a session: an HMAC of its cookie token, so it needs no storage, differs per
 * session, and cannot be computed by a page that cannot read the HttpOnly cookie.
 */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('matricula-dashboard-csrf').digest('base64url');
}

export function csrfTokenMatches(sessionToken: string, presented: string): boolean {
  const expected = Buffer.from(csrfTokenOf(sessionToken));
  const given = Buffer.from(presented);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * A member acting through the dashboard, as the services know callers: its organization and the
 * environment switched to. No key: the member's id stands where a key's would, and no
 * application is the caller's own (each is checked by the service).
 */
export function memberPrincipal(session: DashboardSession): Principal {
  return { orgId: session.member.orgId, environment: session.environment, keyId: session.member.id, appId: '' };
}

export async function membersOf(deps: Deps, orgId: string) {
  const [members, invitations] = await Promise.all([
    listMembers(deps.db, orgId),
    listOpenInvitations(deps.db, orgId, deps.clock.now().toISOString()),
  ]);
  return { members, invitations };
}

/** Removes a member (signed out everywhere); the last owner stays. */
export async function removeMember(deps: Deps, orgId: string, memberId: string, actor: string): Promise<void> {
  const member = await findMember(deps.db, memberId);
  if (!member || member.orgId !== orgId) throw notFound('member');
  if (member.role === 'owner' && (await countOwners(deps.db, orgId)) <= 1)
    throw new ApiError('invalid_state', 'An organization keeps at least one owner.');
  await deps.db.transaction().execute(async (trx) => {
    await deleteSessionsOfMember(trx, member.id);
    await deleteMember(trx, orgId, member.id);
    await audit(deps, { orgId, actor, action: 'member.remove', target: member.email }, trx);
  });
}
