import type { EventEnvelope, EventType } from '../domain/events.ts';
import type { Db } from './db.ts';
import { capabilitiesOf } from './dialect.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from './schema.ts';
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

export async function insertDeliveries(db: Db, deliveries: NewDelivery[], now: string): Promise<void> {
  if (deliveries.length === 0) return;
  await db
    .insertInto('webhook_deliveries')
    .values(
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
    )
    .execute();
}

/**
 * Claims up to `limit` due deliveries of enabled endpoints, oldest due first: each becomes
 * `sending` under a lease until `leaseUntil`, held by `token`, and counts one more attempt. On
 * PostgreSQL the candidate rows are locked with SKIP LOCKED, so concurrent workers claim disjoint
 * sets without waiting for each other; on SQLite the transaction holds the write lock.
 */
export async function claimDueDeliveries(
  db: Db,
  claim: { now: string; leaseUntil: string; token: string; limit: number },
): Promise<ClaimedDelivery[]> {
  const { skipLocked } = capabilitiesOf(db);
  const dueQuery = (q: Db) =>
    q
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
      .select('d.id')
      .where('d.status', 'in', CLAIMABLE)
      .where('d.due_at', '<=', claim.now)
      .where('e.enabled', '=', 1);
  // A read first: an idle worker polling must not take SQLite's write lock every second.
  if (!(await dueQuery(db).limit(1).executeTakeFirst())) return [];
  const claimed = await db.transaction().execute((trx) => {
    const due = dueQuery(trx)
      .orderBy('d.due_at')
      .limit(claim.limit)
      .$if(skipLocked, (q) => q.forUpdate('d').skipLocked());
    return trx
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        status: 'sending',
        due_at: claim.leaseUntil,
        lease_token: claim.token,
        attempt_count: eb('attempt_count', '+', 1),
        updated_at: claim.now,
      }))
      .where('id', 'in', due)
      .returning(['id'])
      .execute();
  });
  if (claimed.length === 0) return [];
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .innerJoin('events as ev', 'ev.id', 'd.event_id')
    .select([
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
    ])
    .where(
      'd.id',
      'in',
      claimed.map((c) => c.id),
    )
    .execute();
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
        data: JSON.parse(row.data) as Record<string, unknown>,
      },
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
  const next = record.next;
  if (!canDeliveryTransition('sending', next.status))
    throw new Error(`a delivery cannot move from sending to ${next.status}`);
  return db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('webhook_deliveries')
      .set({
        status: next.status,
        due_at: next.status === 'pending' ? next.dueAt : null,
        lease_token: null,
        updated_at: now,
        ...(next.status === 'succeeded' ? { delivered_at: now } : {}),
      })
      .where('id', '=', deliveryId)
      .where('status', '=', 'sending')
      .where('lease_token', '=', token)
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) return false;
    const a = record.attempt;
    await trx
      .insertInto('webhook_attempts')
      .values({
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
      })
      .execute();
    if (record.disableEndpoint) {
      await trx
        .updateTable('webhook_endpoints')
        .set({ enabled: 0, disabled_reason: 'endpoint_gone', updated_at: now })
        .where('id', '=', record.disableEndpoint.endpointId)
        .execute();
    }
    return true;
  });
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
