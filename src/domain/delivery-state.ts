/**
 * The webhook delivery workflow, in one table like {@link SESSION_TRANSITIONS}: a delivery is
 * `pending` until due, `sending` while a worker holds its lease, then `succeeded` or `failed`.
 *
 * - pending → sending: a worker claims it (the lease starts).
 * - sending → pending: the attempt failed and a retry is scheduled.
 * - sending → sending: the lease ran out (its worker died) and another worker claims it again.
 * - sending → succeeded | failed: the attempt's outcome, recorded by the lease holder only.
 * - failed | succeeded → pending: a manual retry (never while `sending`: the attempt in flight decides).
 */
export const DELIVERY_STATUSES = ['pending', 'sending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const DELIVERY_TRANSITIONS: Readonly<Record<DeliveryStatus, readonly DeliveryStatus[]>> = {
  pending: ['sending', 'pending'],
  sending: ['pending', 'sending', 'succeeded', 'failed'],
  succeeded: ['pending'],
  failed: ['pending'],
};

export function canDeliveryTransition(from: DeliveryStatus, to: DeliveryStatus): boolean {
  return DELIVERY_TRANSITIONS[from].includes(to);
}

/** The states from which `to` can be reached: the guard of a conditional UPDATE. */
export function deliveryStatusesLeadingTo(to: DeliveryStatus): DeliveryStatus[] {
  return DELIVERY_STATUSES.filter((from) => canDeliveryTransition(from, to));
}

/** A worker may claim a delivery in these states (a `sending` one only once its lease has run out). */
export const CLAIMABLE: readonly DeliveryStatus[] = deliveryStatusesLeadingTo('sending');

/**
 * A manual retry may move a delivery back to `pending` from these states: every state that leads
 * there except `sending`, whose attempt in flight decides what follows.
 */
export const REQUEUEABLE: readonly DeliveryStatus[] = deliveryStatusesLeadingTo('pending').filter(
  (s) => s !== 'sending',
);

/** The outcome of one attempt, as the worker records it. */
export type AttemptOutcome = { status: 'pending'; dueAt: string } | { status: 'succeeded' } | { status: 'failed' };
