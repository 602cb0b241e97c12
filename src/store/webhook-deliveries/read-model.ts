import type { EventType } from '../../domain/events.ts';
import { CLAIMABLE, type AttemptOutcomeName, type DeliveryStatus } from '../../domain/delivery-state.ts';
import type { Db } from '../db.ts';
import { fetchPage, type Page, type PageRequest } from '../pagination.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from '../schema.ts';

/**
 * The read model of deliveries (one event to one endpoint) and their attempt log: what the
 * deliveries API lists and shows, and the backlog the metrics report. A delivery is `pending`
 * until its `due_at`, `sending` while a worker holds its lease (until `due_at`), then `succeeded`
 * or `failed`. A `sending` delivery whose lease ran out is due again: its worker died. The other
 * concerns of the same tables live beside this file: the claim (claim.ts), the writes of new
 * deliveries and of attempts (recording.ts) and the retention of response bodies (retention.ts).
 */

export interface DeliveryAttempt {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  outcome: AttemptOutcomeName;
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

function toAttempt(row: WebhookAttemptsTable): DeliveryAttempt {
  return {
    attempt: row.attempt,
    startedAt: row.started_at,
    durationMs: row.duration_ms,
    statusCode: row.status_code,
    // Written by the worker from the same closed list (webhooks/worker.ts).
    outcome: row.outcome as AttemptOutcomeName,
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
  if (filter.status) {
    // Said as the partial indexes say it (a finished delivery has no due_at, a pending or sending
    // one has one: DELIVERY_TRANSITIONS), so that each status is read through the index that holds
    // only its kind (migrations 0011 and 0016), not through the endpoint's whole history.
    query = query.where('status', '=', filter.status);
    query = CLAIMABLE.includes(filter.status)
      ? query.where('due_at', 'is not', null)
      : query.where('due_at', 'is', null);
  }
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
