import { sql, type QueryCreator, type RawBuilder } from 'kysely';
import type { Environment } from '../domain/environment.ts';
import type { EventEnvelope, EventType } from '../domain/events.ts';
import type { Db } from './db.ts';
import { capabilitiesOf } from './dialect.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import { prepareQuery } from './prepared.ts';
import type { Database, WebhookAttemptsTable, WebhookDeliveriesTable } from './schema.ts';
import {
  canDeliveryTransition,
  CLAIMABLE,
  REQUEUEABLE,
  type AttemptOutcome,
  type DeliveryStatus,
} from '../domain/delivery-state.ts';

/**
 * Deliveries (one event to one endpoint) and their attempt log. A delivery is `pending` until its
 * `due_at`, `sending` while a worker holds its lease (until `due_at`), then `succeeded` or `failed`.
 * A `sending` delivery whose lease ran out is due again: its worker died.
 */

export interface DeliveryAttempt {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  outcome: string;
  errorMessage: string | null;
  responseBody: string;
  responseBodyTruncated: boolean;
}

export interface Delivery {
  id: string;
  endpointId: string;
  eventId: string;
  event: EventType;
  status: DeliveryStatus;
  attemptCount: number;
  /** When the next attempt is due (pending only). */
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
  deliveredAt: string | null;
  attempts: DeliveryAttempt[];
}

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

export interface NewDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
}

/** The INSERT of new deliveries, due now, for the caller to run or to put in a larger statement. */
export function insertDeliveriesQuery(q: QueryCreator<Database>, deliveries: NewDelivery[], now: string) {
  return q.insertInto('webhook_deliveries').values(
    deliveries.map((d) => ({
      id: d.id,
      endpoint_id: d.endpointId,
      event_id: d.eventId,
      event_type: d.eventType,
      status: 'pending' as const,
      due_at: now,
      lease_token: null,
      attempt_count: 0,
      created_at: now,
      updated_at: now,
      delivered_at: null,
    })),
  );
}

export async function insertDeliveries(db: Db, deliveries: NewDelivery[], now: string): Promise<void> {
  if (deliveries.length === 0) return;
  await insertDeliveriesQuery(db, deliveries, now).execute();
}

/** What sending a claimed delivery needs: the delivery, its endpoint and its event. */
const CLAIM_COLUMNS = [
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

interface ClaimRow {
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
type ClaimValues = {
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
  /** The endpoints whose allowance is 0. */
  atCap: string[];
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
  const firstDue = (columns: RawBuilder<unknown>) =>
    sql`select ${columns} from webhook_deliveries as q
      where q.endpoint_id = r.endpoint_id and q.due_at is not null and q.due_at <= ${p.now} and q.status in (${claimableList})
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
function lockedQuery(db: Db, p: ClaimValues) {
  return (
    db
      .selectFrom('webhook_deliveries')
      .select('id')
      // The chosen ids as an array, looked up by primary key: as a semi-join the planner may
      // drive it from the due rows instead, and compare every one with every chosen id.
      .where(sql<boolean>`id = any(array(${chosenIds(p, 'update-returning-join')}))`)
      .where('status', 'in', CLAIMABLE)
      .where('due_at', '<=', p.now)
      .forUpdate()
      .skipLocked()
  );
}

/**
 * Whether anything is due to an endpoint that is not disabled and not at its cap (SQLite's cheap
 * read before it takes the write lock). Disabled endpoints are left out by a NOT EXISTS rather
 * than a join to the enabled ones: with a join the planner may drive the scan from each endpoint
 * through its index of every delivery it ever had.
 */
function dueQuery(db: Db, p: ClaimValues) {
  let query = db
    .selectFrom('webhook_deliveries as d')
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
    );
  if (p.atCap.length > 0) query = query.where('d.endpoint_id', 'not in', p.atCap);
  return query;
}

/** The chosen ids as a query of their own (SQLite: the ranking itself, as a derived table). */
function chosenQuery(db: Db, p: ClaimValues) {
  return db.selectFrom(sql<{ id: string }>`(${chosenIds(p, 'update-then-read')})`.as('chosen')).select('chosen.id');
}

function claimUpdate(
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
 * on SQLite the statement holds the write lock.
 */
export async function claimDueDeliveries(
  db: Db,
  claim: {
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
  },
): Promise<ClaimedDelivery[]> {
  if (claim.limit <= 0) return [];
  const strategy = claimStrategyOf(db);
  const perEndpoint = Math.max(0, Math.min(claim.perEndpoint ?? claim.limit, claim.limit));
  const allowances = new Map<string, number>();
  for (const [id, n] of claim.busy ?? []) if (n > 0) allowances.set(id, Math.max(0, perEndpoint - Math.trunc(n)));
  for (const [id, n] of claim.allowances ?? []) allowances.set(id, Math.max(0, Math.min(Math.trunc(n), claim.limit)));
  const values: ClaimValues = {
    now: claim.now,
    leaseUntil: claim.leaseUntil,
    token: claim.token,
    limit: claim.limit,
    heads: Math.max(perEndpoint, ...allowances.values()),
    perEndpoint,
    allowanceIds: [...allowances.keys()],
    allowanceCounts: [...allowances.values()],
    allowanceJson: JSON.stringify(Object.fromEntries(allowances)),
    atCap: [...allowances].filter(([, n]) => n === 0).map(([id]) => id),
  };
  if (values.heads === 0) return [];
  let rows: ClaimRow[];
  if (strategy === 'update-returning-join') {
    // One statement, one round trip: a single statement is atomic on its own, so it needs no
    // transaction. A claim that finds nothing costs what a read first would: no lock, nothing written.
    rows = (await claimStatement.execute(db, values)).rows as ClaimRow[];
  } else {
    // A read first where a claim locks the whole database (SQLite): an idle worker polling must
    // not take the write lock every second.
    if (!claim.knownDue && !(await dueQuery(db, values).select('d.id').limit(1).executeTakeFirst())) return [];
    // In a transaction although it is one statement: on SQLite it begins IMMEDIATE, so it waits
    // for the write lock (busy_timeout) rather than fail when another process wrote since it began.
    const claimed = await db
      .transaction()
      .execute((trx) => claimUpdate(trx, values, chosenQuery(trx, values)).returning(['id']).execute());
    if (claimed.length === 0) return [];
    rows = await db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .innerJoin('events as ev', 'ev.id', 'd.event_id')
      .select(CLAIM_COLUMNS)
      .where(
        'd.id',
        'in',
        claimed.map((c) => c.id),
      )
      .execute();
  }
  // A row deleted with its endpoint since the claim, or claimed again, is no longer ours.
  return rows
    .filter((row) => row.lease_token === claim.token)
    .map((row) => ({
      id: row.id,
      attempt: row.attempt_count,
      leaseToken: claim.token,
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

export interface AttemptRecord {
  id: string;
  workerId: string;
  attempt: DeliveryAttempt;
  /** What the delivery becomes. */
  next: AttemptOutcome;
  /** A 410: the endpoint is disabled in the same transaction. */
  disableEndpoint?: { endpointId: string };
}

/** One finished attempt to record, under the claim that made it. */
export interface PendingRecord {
  deliveryId: string;
  /** The claim's lease token: only its holder may record. */
  token: string;
  record: AttemptRecord;
}

/**
 * Records an attempt and moves its delivery on, if the claim `token` still holds the lease.
 * @returns false when it does not (the lease ran out and another worker took over, or the
 *   endpoint was deleted): nothing is written.
 */
export async function recordAttempt(
  db: Db,
  deliveryId: string,
  token: string,
  record: AttemptRecord,
  now: string,
): Promise<boolean> {
  const recorded = await recordAttempts(db, [{ deliveryId, token, record }], now);
  return recorded.has(deliveryId);
}

/**
 * Records many attempts in one transaction (the worker's batch), each only if its claim still
 * holds the lease: the deliveries move on, their attempts are logged, a 410 disables its endpoint.
 * Outcomes without a date of their own (succeeded, failed) are written with one UPDATE per
 * outcome; a retry has its own due date and is one UPDATE each.
 * @returns the ids of the deliveries recorded; the others were not ours any more and nothing of
 *   theirs is written.
 */
export async function recordAttempts(db: Db, records: PendingRecord[], now: string): Promise<Set<string>> {
  for (const { record } of records) {
    if (!canDeliveryTransition('sending', record.next.status))
      throw new Error(`a delivery cannot move from sending to ${record.next.status}`);
  }
  if (records.length === 0) return new Set();
  return db.transaction().execute(async (trx) => {
    const recorded = new Set<string>();
    const moveMany = async (status: 'succeeded' | 'failed', group: PendingRecord[]) => {
      if (group.length === 0) return;
      const byToken = new Map<string, string[]>();
      for (const r of group) byToken.set(r.token, [...(byToken.get(r.token) ?? []), r.deliveryId]);
      const rows = await trx
        .updateTable('webhook_deliveries')
        .set({
          status,
          due_at: null,
          lease_token: null,
          updated_at: now,
          ...(status === 'succeeded' ? { delivered_at: now } : {}),
        })
        .where('status', '=', 'sending')
        .where((eb) =>
          eb.or([...byToken].map(([token, ids]) => eb.and([eb('lease_token', '=', token), eb('id', 'in', ids)]))),
        )
        .returning('id')
        .execute();
      for (const row of rows) recorded.add(row.id);
    };
    await moveMany(
      'succeeded',
      records.filter((r) => r.record.next.status === 'succeeded'),
    );
    await moveMany(
      'failed',
      records.filter((r) => r.record.next.status === 'failed'),
    );
    for (const { deliveryId, token, record } of records) {
      const next = record.next;
      if (next.status !== 'pending') continue;
      const updated = await trx
        .updateTable('webhook_deliveries')
        .set({ status: 'pending', due_at: next.dueAt, lease_token: null, updated_at: now })
        .where('id', '=', deliveryId)
        .where('status', '=', 'sending')
        .where('lease_token', '=', token)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) > 0) recorded.add(deliveryId);
    }
    const mine = records.filter((r) => recorded.has(r.deliveryId));
    if (mine.length === 0) return recorded;
    await trx
      .insertInto('webhook_attempts')
      .values(
        mine.map(({ deliveryId, record }) => {
          const a = record.attempt;
          return {
            id: record.id,
            delivery_id: deliveryId,
            attempt: a.attempt,
            worker_id: record.workerId,
            started_at: a.startedAt,
            duration_ms: a.durationMs,
            status_code: a.statusCode,
            outcome: a.outcome,
            error_message: a.errorMessage,
            response_body: a.responseBody,
            response_body_truncated: a.responseBodyTruncated ? 1 : 0,
          };
        }),
      )
      .execute();
    const gone = [
      ...new Set(mine.flatMap((r) => (r.record.disableEndpoint ? [r.record.disableEndpoint.endpointId] : []))),
    ];
    if (gone.length > 0) {
      await trx
        .updateTable('webhook_endpoints')
        .set({ enabled: 0, disabled_reason: 'endpoint_gone', updated_at: now })
        .where('id', 'in', gone)
        .execute();
    }
    return recorded;
  });
}

/**
 * The heartbeat of a live worker: extends to `leaseUntil` the lease of every delivery still
 * `sending` under one of its claim `tokens`. A delivery another worker has claimed since carries
 * that worker's token and is left alone; one already recorded has no token.
 * @returns how many leases were extended.
 */
export async function renewLeases(db: Db, tokens: string[], leaseUntil: string, now: string): Promise<number> {
  if (tokens.length === 0) return 0;
  // A transaction for SQLite's BEGIN IMMEDIATE, as in claimDueDeliveries: a heartbeat must wait
  // for the lock, not fail.
  const updated = await db
    .transaction()
    .execute((trx) =>
      trx
        .updateTable('webhook_deliveries')
        .set({ due_at: leaseUntil, updated_at: now })
        .where('status', '=', 'sending')
        .where('lease_token', 'in', tokens)
        .executeTakeFirst(),
    );
  return Number(updated.numUpdatedRows);
}

/**
 * Makes a delivery due now (a manual retry), whatever its state except `sending`.
 * @returns false when it is being sent at this moment (or does not exist).
 */
export async function requeueDelivery(db: Db, id: string, now: string): Promise<boolean> {
  const updated = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', due_at: now, lease_token: null, updated_at: now })
    .where('id', '=', id)
    .where('status', 'in', REQUEUEABLE)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}

function toAttempt(row: WebhookAttemptsTable): DeliveryAttempt {
  return {
    attempt: row.attempt,
    startedAt: row.started_at,
    durationMs: row.duration_ms,
    statusCode: row.status_code,
    outcome: row.outcome,
    errorMessage: row.error_message,
    responseBody: row.response_body,
    responseBodyTruncated: row.response_body_truncated === 1,
  };
}

function toDelivery(row: WebhookDeliveriesTable): Delivery {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    event: row.event_type as EventType,
    status: row.status,
    attemptCount: row.attempt_count,
    nextAttemptAt: row.status === 'pending' ? row.due_at : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    deliveredAt: row.delivered_at,
    attempts: [],
  };
}

async function withAttempts(db: Db, deliveries: Delivery[]): Promise<Delivery[]> {
  if (deliveries.length === 0) return deliveries;
  const rows = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where(
      'delivery_id',
      'in',
      deliveries.map((d) => d.id),
    )
    .orderBy('attempt')
    .orderBy('id')
    .execute();
  const byDelivery = new Map(deliveries.map((d) => [d.id, d]));
  for (const row of rows) byDelivery.get(row.delivery_id)!.attempts.push(toAttempt(row));
  return deliveries;
}

export async function findDelivery(db: Db, endpointId: string, id: string): Promise<Delivery | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', id)
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirst();
  return row && (await withAttempts(db, [toDelivery(row)]))[0];
}

/** Deliveries of an endpoint, newest first, each with its attempts. */
export async function listDeliveries(
  db: Db,
  endpointId: string,
  filter: { status?: DeliveryStatus },
  page: PageRequest,
): Promise<Page<Delivery>> {
  let query = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  if (filter.status) query = query.where('status', '=', filter.status);
  const result = await fetchPage(query, 'id', page, toDelivery);
  return { ...result, items: await withAttempts(db, result.items) };
}

/** The outbox backlog: deliveries due now to an enabled endpoint, and when the oldest of them came due. */
export async function dueDeliveryBacklog(db: Db, now: string): Promise<{ count: number; oldestDueAt: string | null }> {
  const row = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('d.due_at').as('oldest')])
    .where('d.status', 'in', CLAIMABLE)
    .where('d.due_at', '<=', now)
    .where('e.enabled', '=', 1)
    .executeTakeFirst();
  return { count: Number(row?.n ?? 0), oldestDueAt: row?.oldest ? String(row.oldest) : null };
}

/**
 * Empties the stored response bodies of every attempt to deliver an event about `sessionId`: a
 * receiver may echo what it was sent, and redaction erases that too.
 */
export async function clearSessionAttemptBodies(db: Db, sessionId: string): Promise<number> {
  const result = await db
    .updateTable('webhook_attempts')
    .set({ response_body: '', response_body_truncated: 0 })
    .where('delivery_id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries as d')
        .innerJoin('events as ev', 'ev.id', 'd.event_id')
        .select('d.id')
        .where('ev.session_id', '=', sessionId),
    )
    .where('response_body', '<>', '')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Empties the stored response bodies of attempts started before `cutoff` (result retention). */
export async function clearAttemptBodiesBefore(db: Db, cutoff: string): Promise<number> {
  const result = await db
    .updateTable('webhook_attempts')
    .set({ response_body: '', response_body_truncated: 0 })
    .where('started_at', '<', cutoff)
    .where('response_body', '<>', '')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
