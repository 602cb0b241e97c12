import type { Clock } from '../domain/clock.ts';
import type { EventEnvelope, EventType } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import type { Environment } from '../domain/environment.ts';
import type { Db } from '../store/db.ts';
import { insertEvent } from '../store/events.ts';
import { enqueueDeliveries } from '../webhooks/outbox.ts';

export interface EventSource {
  appId: string;
  orgId: string;
  environment: Environment;
}

/**
 * Writes an event into the outbox, with one delivery per subscribed webhook endpoint. Call it
 * inside the transaction of the state change that caused it: both commit, or neither does.
 */
export async function recordEvent(
  trx: Db,
  clock: Clock,
  source: EventSource,
  type: EventType,
  data: Record<string, unknown>,
): Promise<EventEnvelope> {
  const event: EventEnvelope = {
    id: newId('event', clock),
    event: type,
    createdAt: clock.now().toISOString(),
    appId: source.appId,
    environment: source.environment,
    data,
  };
  await insertEvent(trx, event, source.orgId);
  await enqueueDeliveries(trx, event, clock);
  return event;
}
