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
 * it, in the caller's transaction. On PostgreSQL it also queues a NOTIFY, which the server sends
 * at commit (and drops at rollback): workers of other processes wake exactly when the rows they
 * are told about are visible. The caller wakes its own process's worker after the commit.
 */
export async function enqueueDeliveries(trx: Db, event: EventEnvelope, clock: Clock): Promise<void> {
  const endpoints = await subscribedEndpoints(trx, event.appId, event.event);
  await enqueueFor(
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
  await notifyWorkers(trx);
  return deliveries;
}

/** Queues a wake-up for the workers of every process; a no-op where LISTEN/NOTIFY does not exist. */
export async function notifyWorkers(trx: Db): Promise<void> {
  if (capabilitiesOf(trx).listenNotify)
    await sql`select pg_notify(${sql.raw(DELIVERY_CHANNEL_EXPRESSION)}, '')`.execute(trx);
}
