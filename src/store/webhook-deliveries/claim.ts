import { sql, type QueryCreator, type RawBuilder } from 'kysely';
import { CLAIMABLE } from '../../domain/delivery-state.ts';
import type { Environment } from '../../domain/environment.ts';
import type { EventEnvelope, EventType } from '../../domain/events.ts';
import type { Db } from '../db.ts';
import { capabilitiesOf } from '../dialect.ts';
import { prepareQuery } from '../prepared.ts';
import type { Database } from '../schema.ts';

/**
 * The claim: due deliveries become `sending` under a worker's lease (claimDueDeliveries); what
 * becomes of the leases after is leases.ts. The policy of what a claim may take is
 * domain/claim-plan.ts; this file is the SQL that takes it, in one of two named strategies.
 */

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery {
  id: string;
  /** The number of the attempt this claim makes (1 for the first). */
  attempt: number;
  /** The claim's lease: only it may record the outcome. */
  leaseToken: string;
  event: EventEnvelope;
  endpoint: {
    id: string;
    url: string;
    secret: string;
    previousSecret: string | null;
    previousSecretExpiresAt: string | null;
  };
}

/** What sending a claimed delivery needs: the delivery, its endpoint and its event. */
export const CLAIM_COLUMNS = [
  'd.id',
  'd.attempt_count',
  'd.lease_token',
  'e.id as endpoint_id',
  'e.url',
  'e.secret',
  'e.previous_secret',
  'e.previous_secret_expires_at',
  'ev.id as event_id',
  'ev.type',
  'ev.created_at as event_created_at',
  'ev.app_id',
  'ev.environment',
  'ev.data',
] as const;

export interface ClaimRow {
  id: string;
  attempt_count: number;
  lease_token: string | null;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  event_id: string;
  type: string;
  event_created_at: string;
  app_id: string;
  environment: Environment;
  data: string;
}

/**
 * How a claim is made on a dialect, by name (a strategy, as kysely's adapters are):
 * - `update-returning-join` (PostgreSQL): one statement, a named prepared statement whose text is
 *   the same for every claim. Its UPDATE locks the chosen rows with SKIP LOCKED and checks them
 *   again once locked, inside a WITH whose outer query reads what sending needs. Each endpoint's
 *   first due rows come from a LATERAL read; the allowances are two arrays.
 * - `update-then-read` (SQLite): the UPDATE in a BEGIN IMMEDIATE transaction (the statement holds
 *   the database's write lock), then a read of what sending needs. Each endpoint's first due rows
 *   come from a correlated subquery; the allowances are one JSON object.
 */
export type ClaimStrategy = 'update-returning-join' | 'update-then-read';

/** The claim strategy of a dialect: the one place that maps capabilities to it. */
export function claimStrategyOf(db: Db): ClaimStrategy {
  const { skipLocked, writableCtes } = capabilitiesOf(db);
  return skipLocked && writableCtes ? 'update-returning-join' : 'update-then-read';
}

/** What a claim is made with, as the values its query takes. */
export type ClaimValues = {
  now: string;
  leaseUntil: string;
  token: string;
  limit: number;
  /** How many of each endpoint's due deliveries are read: the largest allowance, at most the limit. */
  heads: number;
  /** The allowance of an endpoint not listed. */
  perEndpoint: number;
  /** The listed allowances (PostgreSQL: two arrays, one statement for any allowances). */
  allowanceIds: string[];
  allowanceCounts: number[];
  /** The same as one JSON object (SQLite). */
  allowanceJson: string;
  /** The endpoints whose allowance is 0, as a JSON array (SQLite's cheap read leaves them out). */
  atCapJson: string;
};

const claimableList = sql.join(CLAIMABLE.map((s) => sql.lit(s)));

/**
 * The ids a claim takes, ranked per endpoint rather than from one window of the oldest due rows
 * (where a few endpoints with long queues filled the window, and every freed slot went back to
 * them):
 * 1. the endpoints that have any delivery due or leased: a walk of the partial index on
 *    (endpoint_id, due_at), one step per endpoint, however long each one's queue;
 * 2. of those, the enabled ones with an allowance (what the worker's plan lets it take there);
 * 3. each one's oldest due deliveries (at most `heads`), numbered by their place in its queue;
 * 4. those within their endpoint's allowance, numbered by their turn in their organization
 *    (round-robin across its endpoints), then taken round-robin across organizations: first
 *    turns first, older first among equal turns, up to the limit.
 */
function chosenIds(p: ClaimValues, strategy: ClaimStrategy) {
  const postgres = strategy === 'update-returning-join';
  const allowance = postgres
    ? sql`coalesce((select a.n from unnest(${p.allowanceIds}::text[], ${p.allowanceCounts}::int[]) as a(id, n) where a.id = h.endpoint_id), ${p.perEndpoint})`
    : sql`coalesce((select a.value from json_each(${p.allowanceJson}) as a where a.key = h.endpoint_id), ${p.perEndpoint})`;
  // PostgreSQL reads each endpoint's due deliveries with no test of their status: a delivery has a
  // due_at exactly while it is pending or sending (DELIVERY_TRANSITIONS, and listDeliveries reads
  // by the same rule), so the test removed nothing, and the locked query tests it again. With it,
  // the planner (whose statistics count most deliveries as finished) expected about one due row
  // per endpoint and read an endpoint's whole backlog through a bitmap scan to sort it, on every
  // claim (4 ms at 16,000 due), instead of walking the index to the first `heads`.
  const claimable = postgres ? sql`` : sql`and q.status in (${claimableList})`;
  const firstDue = (columns: RawBuilder<unknown>) =>
    sql`select ${columns} from webhook_deliveries as q
      where q.endpoint_id = r.endpoint_id and q.due_at is not null and q.due_at <= ${p.now} ${claimable}
      order by q.due_at limit ${p.heads}`;
  const candidates = postgres
    ? sql`select c.id, c.due_at, r.endpoint_id, r.org_id, r.allowance from ready as r
        cross join lateral (${firstDue(sql`q.id, q.due_at`)}) as c`
    : sql`select d.id, d.due_at, r.endpoint_id, r.org_id, r.allowance from ready as r
        join webhook_deliveries as d on d.id in (${firstDue(sql`q.id`)})`;
  return sql<{ id: string }>`with recursive heads(endpoint_id) as (
      select (select x.endpoint_id from webhook_deliveries as x where x.due_at is not null
        order by x.endpoint_id limit 1)
      union all
      select (select x.endpoint_id from webhook_deliveries as x where x.due_at is not null
        and x.endpoint_id > h.endpoint_id order by x.endpoint_id limit 1)
      from heads as h where h.endpoint_id is not null
    ), ready as (
      select h.endpoint_id, e.org_id, ${allowance} as allowance
      from heads as h join webhook_endpoints as e on e.id = h.endpoint_id
      where e.enabled = 1
    ), candidates as (${candidates}), placed as (
      select id, due_at, org_id, allowance,
        row_number() over (partition by endpoint_id order by due_at, id) as place
      from candidates where allowance > 0
    ), ranked as (
      select id, due_at, row_number() over (partition by org_id order by place, due_at, id) as turn
      from placed where place <= allowance
    )
    select id from ranked order by turn, due_at, id limit ${p.limit}`;
}

/**
 * The claim as one statement (PostgreSQL): an UPDATE of the chosen rows, locked with SKIP LOCKED and
 * checked again once locked, inside a WITH whose outer query reads what sending needs. Its text is
 * the same for every claim (the allowances are arrays), so it runs as a named prepared statement:
 * planning it on every claim cost 0.4 ms of the server's CPU, as much as running it. PostgreSQL
 * then keeps a generic plan per connection and makes it again when the table is analyzed
 * (autovacuum, on by default): without that, a plan made while the table was nearly empty stays.
 */
const claimQuery = (db: Db, p: ClaimValues) =>
  db
    .with('claimed', (q) =>
      claimUpdate(q, p, lockedQuery(db, p)).returning([
        'id',
        'attempt_count',
        'lease_token',
        'endpoint_id',
        'event_id',
      ]),
    )
    .selectFrom('claimed as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .innerJoin('events as ev', 'ev.id', 'd.event_id')
    .select(CLAIM_COLUMNS);
const claimStatement = prepareQuery('claim_due_deliveries', claimQuery);

/**
 * PostgreSQL: the chosen rows locked, skipping rows another worker is claiming, and checked again
 * once locked (the other worker may have claimed them and committed).
 */
export function lockedQuery(db: Db, p: ClaimValues) {
  return (
    db
      .selectFrom('webhook_deliveries')
      .select('id')
      // The chosen ids as an array, looked up by primary key: as a semi-join the planner may
      // drive it from the due rows instead, and compare every one with every chosen id.
      .where(sql<boolean>`id = any(array(${chosenIds(p, 'update-returning-join')}))`)
      .where('status', 'in', CLAIMABLE)
      // Tested as `is true`, which is no index condition: written as a plain comparison, it let the
      // planner, whose statistics said little was due, read the partial index of due deliveries
      // and test every due row against the chosen ids, on every claim (5 ms at 20,000 due).
      .where(sql<boolean>`(due_at <= ${p.now}) is true`)
      .forUpdate()
      .skipLocked()
  );
}

/**
 * Whether anything is due to an endpoint that is not disabled and not at its cap (SQLite's cheap
 * read before it takes the write lock). Disabled endpoints are left out by a NOT EXISTS rather
 * than a join to the enabled ones: with a join the planner may drive the scan from each endpoint
 * through its index of every delivery it ever had. Compiled once, as the claim's other statements
 * on SQLite are (the endpoints at their cap are one JSON value).
 */
const dueStatement = prepareQuery('claim_due_read', (db: Db, p: ClaimValues) =>
  db
    .selectFrom('webhook_deliveries as d')
    .select('d.id')
    .where('d.status', 'in', CLAIMABLE)
    .where('d.due_at', '<=', p.now)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('webhook_endpoints as e')
            .select(sql.lit(1).as('held'))
            .whereRef('e.id', '=', 'd.endpoint_id')
            .where('e.enabled', '=', 0),
        ),
      ),
    )
    .where(sql<boolean>`d.endpoint_id not in (select value from json_each(${p.atCapJson}))`)
    .limit(1),
);

/** SQLite's claim: the UPDATE of the chosen rows, returning their ids; the same text for every claim. */
const sqliteClaimStatement = prepareQuery('claim_due_deliveries_sqlite', (db: Db, p: ClaimValues) =>
  claimUpdate(db, p, chosenQuery(db, p)).returning(['id']),
);

/** What sending the claimed deliveries needs (SQLite), by their ids as one JSON array. */
const claimedRowsStatement = prepareQuery('claimed_rows', (db: Db, p: { ids: string }) =>
  db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .innerJoin('events as ev', 'ev.id', 'd.event_id')
    .select(CLAIM_COLUMNS)
    .where(sql<boolean>`d.id in (select value from json_each(${p.ids}))`),
);

/** The chosen ids as a query of their own (SQLite: the ranking itself, as a derived table). */
function chosenQuery(db: Db, p: ClaimValues) {
  return db.selectFrom(sql<{ id: string }>`(${chosenIds(p, 'update-then-read')})`.as('chosen')).select('chosen.id');
}

export function claimUpdate(
  q: QueryCreator<Database>,
  p: ClaimValues,
  target: ReturnType<typeof lockedQuery> | ReturnType<typeof chosenQuery>,
) {
  return q
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: 'sending',
      due_at: p.leaseUntil,
      lease_token: p.token,
      attempt_count: eb('attempt_count', '+', 1),
      updated_at: p.now,
    }))
    .where('id', 'in', target);
}

/** What a claim takes: its lease, its limits, and what the worker already has in flight. */
export interface ClaimRequest {
  now: string;
  leaseUntil: string;
  token: string;
  limit: number;
  /** At most this many in flight per endpoint for this worker; unlimited by default. */
  perEndpoint?: number;
  /** Deliveries the worker already has in flight, by endpoint id. */
  busy?: ReadonlyMap<string, number>;
  /** How many more each listed endpoint may get, whatever `perEndpoint` and `busy` say. */
  allowances?: ReadonlyMap<string, number>;
  /** Skip the cheap read that avoids the write lock when nothing is due (the caller knows more is due). */
  knownDue?: boolean;
}

/** The values of a claim's query; `heads` 0: the claim can take nothing. */
export function claimValuesOf(claim: ClaimRequest): ClaimValues {
  const perEndpoint = Math.max(0, Math.min(claim.perEndpoint ?? claim.limit, claim.limit));
  const allowances = new Map<string, number>();
  for (const [id, n] of claim.busy ?? []) if (n > 0) allowances.set(id, Math.max(0, perEndpoint - Math.trunc(n)));
  for (const [id, n] of claim.allowances ?? []) allowances.set(id, Math.max(0, Math.min(Math.trunc(n), claim.limit)));
  return {
    now: claim.now,
    leaseUntil: claim.leaseUntil,
    token: claim.token,
    limit: claim.limit,
    heads: claim.limit <= 0 ? 0 : Math.max(perEndpoint, ...allowances.values()),
    perEndpoint,
    allowanceIds: [...allowances.keys()],
    allowanceCounts: [...allowances.values()],
    allowanceJson: JSON.stringify(Object.fromEntries(allowances)),
    atCapJson: JSON.stringify([...allowances].filter(([, n]) => n === 0).map(([id]) => id)),
  };
}

/**
 * Claims up to `limit` due deliveries of enabled endpoints, fairly: each endpoint's oldest due
 * first, round-robin across organizations and across each organization's endpoints, and to each
 * endpoint no more than its allowance: `allowances` where given, else `perEndpoint` less what the
 * worker already has in flight there (`busy`). So a slow endpoint with a long queue can neither
 * take every slot of a worker nor hide another endpoint's deliveries from the claim. The policy
 * that sets the allowances is domain/claim-plan.ts. Each claimed delivery becomes `sending` under
 * a lease until `leaseUntil`, held by `token`, and counts one more attempt.
 *
 * One UPDATE claims the whole batch. On PostgreSQL the rows are locked with SKIP LOCKED and
 * re-checked once locked, so concurrent workers claim disjoint sets without waiting for each other;
 * on SQLite the statement holds the write lock. (On PostgreSQL a running worker makes most of its
 * claims in the statement that records its finished attempts instead: record-and-claim.ts.)
 */
export async function claimDueDeliveries(db: Db, claim: ClaimRequest): Promise<ClaimedDelivery[]> {
  const values = claimValuesOf(claim);
  if (values.heads === 0) return [];
  let rows: ClaimRow[];
  if (claimStrategyOf(db) === 'update-returning-join') {
    // One statement, one round trip: a single statement is atomic on its own, so it needs no
    // transaction. A claim that finds nothing costs what a read first would: no lock, nothing written.
    rows = (await claimStatement.execute(db, values)).rows as ClaimRow[];
  } else {
    // A read first where a claim locks the whole database (SQLite): an idle worker polling must
    // not take the write lock every second.
    if (!claim.knownDue && (await dueStatement.execute(db, values)).rows.length === 0) return [];
    // In a transaction although it is one statement: on SQLite it begins IMMEDIATE, so it waits
    // for the write lock (busy_timeout) rather than fail when another process wrote since it began.
    const claimed = await db.transaction().execute((trx) => sqliteClaimStatement.execute(trx, values));
    if (claimed.rows.length === 0) return [];
    ({ rows } = await claimedRowsStatement.execute(db, { ids: JSON.stringify(claimed.rows.map((c) => c.id)) }));
  }
  return claimedDeliveries(rows, claim.token);
}

/** The deliveries of a claim's rows: those still under its `token` (a row deleted with its endpoint since the claim, or claimed again, is no longer ours). */
export function claimedDeliveries(rows: readonly ClaimRow[], token: string): ClaimedDelivery[] {
  return rows
    .filter((row) => row.lease_token === token)
    .map((row) => ({
      id: row.id,
      attempt: row.attempt_count,
      leaseToken: token,
      event: {
        id: row.event_id,
        event: row.type as EventType,
        createdAt: row.event_created_at,
        appId: row.app_id,
        environment: row.environment,
        // Written by the unit of work, whose producers' types are the event schemas (domain/events.ts).
        data: JSON.parse(row.data) as unknown,
      } as EventEnvelope,
      endpoint: {
        id: row.endpoint_id,
        url: row.url,
        secret: row.secret,
        previousSecret: row.previous_secret,
        previousSecretExpiresAt: row.previous_secret_expires_at,
      },
    }));
}
