import { toReportedClaims } from '../domain/claims.ts';
import type { Session, SessionResult } from '../domain/session.ts';
import { OPEN_STATUSES, SESSION_STATUSES, type SessionStatus } from '../domain/session-state.ts';
import type { Environment } from '../domain/environment.ts';
import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import { sql, type Insertable, type Selectable } from 'kysely';
import { prepareQuery } from './prepared.ts';
import type { SessionsTable } from './schema.ts';

/**
 * A stored result in today's shape: claims with every always-reported key (null if unknown), and
 * the fields left out when stored (null: {@link storedResultJson}), or stored before they existed
 * (`failureMessage`, `protocol`), as they read.
 */
function storedResult(json: string): SessionResult {
  const result = JSON.parse(json) as Partial<SessionResult>;
  return {
    ...result,
    format: result.format ?? null,
    university: result.university ?? null,
    claims: toReportedClaims(result.claims ?? {}),
    failureReason: result.failureReason ?? null,
    failureMessage: result.failureMessage ?? null,
    protocol: result.protocol ?? 'matricula',
  } as SessionResult;
}

/**
 * A result as the `result` column holds it: without its null fields, which {@link storedResult}
 * restores. A redacted result is mostly nulls; written out they took about 200 bytes of every
 * redacted session's row (110 MB per million sessions on PostgreSQL; issue 30, disk). A claim
 * whose key says whether it is reported keeps its null (`university_domain`: reported as null
 * when asked for, left out of the result when not).
 */
export function storedResultJson(result: SessionResult): string {
  const claims = Object.fromEntries(
    Object.entries(result.claims).filter(([name, value]) => value !== null || name === 'university_domain'),
  );
  return JSON.stringify(
    Object.fromEntries(
      Object.entries({ ...result, claims }).filter(([, value]) => value !== null && value !== undefined),
    ),
  );
}

export function toSession(row: Selectable<SessionsTable>): Session {
  return {
    id: row.id,
    appId: row.app_id,
    orgId: row.org_id,
    environment: row.environment,
    status: row.status,
    challengeNonce: row.challenge_nonce,
    purpose: row.purpose,
    requiredClaims: JSON.parse(row.required_claims) as Session['requiredClaims'],
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, string>),
    clientReference: row.client_reference,
    failedAttempts: Number(row.failed_attempts),
    result: row.result === null ? null : storedResult(row.result),
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    consentedAt: row.consented_at,
    completedAt: row.completed_at,
    redactedAt: row.redacted_at,
    returnUrl: row.return_url,
  };
}

const insertSessionRow = prepareQuery('insert_session', (db, p: Insertable<SessionsTable>) =>
  db.insertInto('sessions').values({
    id: p.id,
    app_id: p.app_id,
    org_id: p.org_id,
    environment: p.environment,
    status: p.status,
    challenge_nonce: p.challenge_nonce,
    purpose: p.purpose,
    required_claims: p.required_claims,
    metadata: p.metadata,
    client_reference: p.client_reference,
    failed_attempts: p.failed_attempts,
    verified: p.verified,
    result: p.result,
    expires_at: p.expires_at,
    created_at: p.created_at,
    updated_at: p.updated_at,
    consented_at: p.consented_at,
    completed_at: p.completed_at,
    redacted_at: p.redacted_at,
    return_url: p.return_url,
  }),
);

export function toRow(s: Session): Insertable<SessionsTable> {
  return {
    id: s.id,
    app_id: s.appId,
    org_id: s.orgId,
    environment: s.environment,
    status: s.status,
    challenge_nonce: s.challengeNonce,
    purpose: s.purpose,
    required_claims: JSON.stringify(s.requiredClaims),
    metadata: s.metadata === null ? null : JSON.stringify(s.metadata),
    client_reference: s.clientReference,
    failed_attempts: 0,
    verified: null,
    result: null,
    expires_at: s.expiresAt,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    consented_at: null,
    completed_at: null,
    redacted_at: null,
    return_url: s.returnUrl,
  };
}

export async function insertSession(db: Db, s: Session): Promise<void> {
  await insertSessionRow.execute(db, toRow(s));
}

/** Several new sessions in one statement: all or none (store/session-inserts.ts batches them). */
export async function insertSessions(db: Db, sessions: Session[]): Promise<void> {
  await db.insertInto('sessions').values(sessions.map(toRow)).execute();
}

/** Every column of `sessions`: the compiler holds the list complete. */
const SESSION_COLUMN_SET = {
  id: true,
  app_id: true,
  org_id: true,
  environment: true,
  status: true,
  challenge_nonce: true,
  purpose: true,
  required_claims: true,
  metadata: true,
  client_reference: true,
  failed_attempts: true,
  verified: true,
  result: true,
  expires_at: true,
  created_at: true,
  updated_at: true,
  consented_at: true,
  completed_at: true,
  redacted_at: true,
  return_url: true,
} as const satisfies Record<keyof SessionsTable, true>;

/**
 * A session's columns by name, for the reads that run as named prepared statements on PostgreSQL
 * (prepared.ts). Over `sessions.*` such a statement fails on every later call ("cached plan must
 * not change result type") once another process adds a column to `sessions`: an old process in a
 * rolling upgrade (docs/operations.md, "Upgrades") would answer every session read with an error.
 */
export const SESSION_COLUMNS = (Object.keys(SESSION_COLUMN_SET) as Array<keyof SessionsTable>).map(
  (column) => `sessions.${column}` as const,
);

const sessionById = prepareQuery('session_by_id', (db, p: { id: string }) =>
  db.selectFrom('sessions').select(SESSION_COLUMNS).where('id', '=', p.id),
);

export async function findSession(db: Db, id: string): Promise<Session | undefined> {
  const [row] = (await sessionById.execute(db, { id })).rows;
  return row && toSession(row);
}

/** The stored status of each of these sessions that exists (one query, for the status requests that wait). */
export async function sessionStatuses(db: Db, ids: string[]): Promise<Map<string, SessionStatus>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('sessions').select(['id', 'status']).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row.status]));
}

export interface SessionFilter {
  orgId: string;
  environment: Environment;
  appId?: string;
  status?: SessionStatus;
  now: Date;
}

/**
 * The page of sessions that match any of `branches` (disjoint queries), newest first: each branch
 * reads only ids, in id order with its own limit, through its own index (sessions by status,
 * migration 0016; an index-only read on PostgreSQL), the short lists are merged, and the page's
 * rows are read by id. One query with an OR of the branches would read every match of the
 * organization to sort them.
 */
async function pageOfAny(db: Db, branches: SessionsQuery[], page: PageRequest): Promise<Page<Session>> {
  const lists = branches.map((branch, i) => {
    const after = page.startingAfter === undefined ? branch : branch.where('id', '<', page.startingAfter);
    return db
      .selectFrom(
        after
          .select('id')
          .orderBy('id', 'desc')
          .limit(page.limit + 1)
          .as(`b${i}`),
      )
      .select('id');
  });
  const merged = lists.slice(1).reduce((all, list) => all.unionAll(list), lists[0]);
  const rows = await db
    .selectFrom('sessions')
    .selectAll()
    .where(
      'id',
      'in',
      db
        .selectFrom(merged.as('m'))
        .select('id')
        .orderBy('id', 'desc')
        .limit(page.limit + 1),
    )
    .orderBy('id', 'desc')
    .execute();
  const hasMore = rows.length > page.limit;
  const items = rows.slice(0, page.limit).map(toSession);
  return { items, hasMore, nextCursor: hasMore ? items[items.length - 1].id : null };
}

type SessionsQuery = ReturnType<typeof sessionsOf>;

/** The sessions of the filter's organization and environment (and application, if given); nothing selected yet. */
function sessionsOf(db: Db, filter: SessionFilter) {
  const query = db
    .selectFrom('sessions')
    .where('org_id', '=', filter.orgId)
    .where('environment', '=', filter.environment);
  return filter.appId ? query.where('app_id', '=', filter.appId) : query;
}

export async function listSessions(db: Db, filter: SessionFilter, page: PageRequest): Promise<Page<Session>> {
  const query = sessionsOf(db, filter);
  const now = filter.now.toISOString();
  // Filters see expiry exactly as reads do: an open session past expiresAt is "expired".
  if (filter.status === 'expired') {
    return pageOfAny(
      db,
      [
        query.where('status', '=', 'expired'),
        query.where('status', 'in', ['pending', 'consented']).where('expires_at', '<=', now),
      ],
      page,
    );
  } else if (filter.status === 'pending' || filter.status === 'consented') {
    const open = query.where('status', '=', filter.status).where('expires_at', '>', now);
    return fetchPage(open.selectAll(), 'id', page, toSession);
  } else if (filter.status) {
    return fetchPage(query.where('status', '=', filter.status).selectAll(), 'id', page, toSession);
  } else if (filter.appId) {
    // An application's sessions in id order: its own index (app_id, id), which the day counts of
    // the funnel use too (store/funnel.ts).
    return fetchPage(query.selectAll(), 'id', page, toSession);
  }
  // The organization's: one ordered read per status (migration 0022 dropped the index of
  // (org_id, environment, id) that held every session once more).
  return pageOfAny(
    db,
    SESSION_STATUSES.map((status) => query.where('status', '=', status)),
    page,
  );
}

/**
 * The query of {@link dueForExpiry}: the open sessions past their deadline, through the partial
 * index of exactly the open sessions (migration 0022), whose condition it states as the index
 * does, literals and all: a planner proves a partial index usable from the query's text, never
 * from a bound parameter (a prepared statement's generic plan would scan instead).
 */
export function sessionsDueForExpiry(db: Db, now: string, limit: number) {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where(sql<boolean>`status in ('pending', 'consented')`)
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit);
}

/** Open sessions whose expiry has passed, oldest first. */
export async function dueForExpiry(db: Db, now: Date, limit: number): Promise<Session[]> {
  return (await sessionsDueForExpiry(db, now.toISOString(), limit).execute()).map(toSession);
}

/**
 * Erases a session's data: metadata and clientReference go, the result is replaced by its redacted
 * form (`redactedResult`). Only a session that has ended moves (a terminal status, or open but past
 * its expiry), and only once: of two racing redactions exactly one returns true.
 */
export async function redactSessionRow(
  db: Db,
  id: string,
  r: { at: string; result: SessionResult | null },
): Promise<boolean> {
  const updated = await db
    .updateTable('sessions')
    .set({
      metadata: null,
      client_reference: null,
      return_url: null,
      result: r.result === null ? null : storedResultJson(r.result),
      redacted_at: r.at,
    })
    .where('id', '=', id)
    .where('redacted_at', 'is', null)
    .where((eb) => eb.or([eb('status', 'not in', [...OPEN_STATUSES]), eb('expires_at', '<=', r.at)]))
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) === 1;
}

/**
 * The query of {@link dueForRetention}: `redacted_at is null` is the condition of the partial index
 * of migration 0016 (sessions_retention_due, in expiry order), so with nothing due it reads one
 * index page whatever the size of the table.
 */
export function sessionsDueForRetention(db: Db, endedBy: string, limit: number) {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('redacted_at', 'is', null)
    .where('expires_at', '<=', endedBy)
    .orderBy('expires_at')
    .limit(limit);
}

/** Sessions not yet redacted whose life ended at or before `endedBy`, oldest first. */
export async function dueForRetention(db: Db, endedBy: string, limit: number): Promise<Session[]> {
  return (await sessionsDueForRetention(db, endedBy, limit).execute()).map(toSession);
}
