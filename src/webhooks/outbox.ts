import type { Clock } from '../domain/clock.ts';
import type { EventEnvelope } from '../domain/events.ts';
import type { Db } from '../store/db.ts';

/**
 * Creates the deliveries of an event, one per enabled endpoint of its application subscribed to
 * it, in the caller's transaction. Webhook endpoints are not stored yet (they arrive with the
 * webhooks migration), so there is nothing to deliver to.
 */
export async function enqueueDeliveries(_trx: Db, _event: EventEnvelope, _clock: Clock): Promise<void> {}
