import { sql } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import type { EventEnvelope } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import type { Db } from '../store/db.ts';
import { capabilitiesOf } from '../store/dialect.ts';
import { insertDeliveries, type NewDelivery } from '../store/webhook-deliveries.ts';
import { subscribedEndpoints } from '../store/webhooks.ts';

/**
 * The transactional outbox (DESIGN §6): deliveries are written in the transaction of the state
 * change that caused their event, so that both commit or neither does; a worker sends them later.
 */

/**
 * The PostgreSQL channel that wakes delivery workers in every process when deliveries commit: one
 * per schema, so installations (or test runs) sharing a database in separate schemas do not wake
 * each other. The server computes it from the connection's current schema, the same way on both
 * sides; it stays within PostgreSQL's 63-character limit on channel names.
 */
export const DELIVERY_CHANNEL_EXPRESSION = "left('matricula_webhooks:' || current_schema(), 63)";

/**
 * Creates the deliveries of an event, one per enabled endpoint of its application subscribed to
 * it, in the caller's transaction. Waking the workers is the unit of work's business
 * (services/unit-of-work.ts), once the transaction commits.
 */
export async function enqueueDeliveries(trx: Db, event: EventEnvelope, clock: Clock): Promise<NewDelivery[]> {
  const endpoints = await subscribedEndpoints(trx, event.appId, event.event);
  return enqueueFor(
    trx,
    event,
    endpoints.map((e) => e.id),
    clock,
  );
}

/** Deliveries of `event` to exactly these endpoints (a test event goes to one endpoint only). */
export async function enqueueFor(
  trx: Db,
  event: EventEnvelope,
  endpointIds: string[],
  clock: Clock,
): Promise<NewDelivery[]> {
  const deliveries = endpointIds.map((endpointId) => ({
    id: newId('delivery', clock),
    endpointId,
    eventId: event.id,
    eventType: event.event,
  }));
  if (deliveries.length === 0) return deliveries;
  await insertDeliveries(trx, deliveries, clock.now().toISOString());
  return deliveries;
}

/** Most endpoint ids a wake-up names (PostgreSQL caps a payload at 8000 bytes); beyond, it names none. */
const MAX_WAKE_ENDPOINTS = 100;

/** The payload of a wake-up: the endpoints' ids, comma-separated, or '' when they are not known. */
export function wakePayload(endpointIds?: ReadonlySet<string>): string {
  if (!endpointIds || endpointIds.size > MAX_WAKE_ENDPOINTS) return '';
  return [...endpointIds].join(',');
}

/** The endpoint ids a wake-up names, or undefined (any endpoint may have deliveries due). */
export function wakeEndpoints(payload: string | undefined): ReadonlySet<string> | undefined {
  return payload ? new Set(payload.split(',')) : undefined;
}

/**
 * Queues a wake-up for the workers of every process, inside the transaction: PostgreSQL sends it
 * at commit and drops it at rollback, so workers elsewhere wake exactly when the rows they are told
 * about are visible. It names the endpoints of the new deliveries when they are known, so that a
 * worker with all of them at its cap need not look. A no-op where LISTEN/NOTIFY does not exist.
 */
export async function notifyWorkers(trx: Db, endpointIds?: ReadonlySet<string>): Promise<void> {
  if (capabilitiesOf(trx).listenNotify)
    await sql`select pg_notify(${sql.raw(DELIVERY_CHANNEL_EXPRESSION)}, ${wakePayload(endpointIds)})`.execute(trx);
}
