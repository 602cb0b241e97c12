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

/**
 * Why an attempt was not acknowledged (an attempt's `outcome` in the API, beside `succeeded`):
 * - `timeout`: no complete answer (headers and body) within timeoutMs, or the connection could not open in time;
 * - `dns_failed`: the host name did not resolve;
 * - `connection_failed`: refused, reset, closed early or another socket error;
 * - `tls_failed`: TLS handshake or certificate verification failed;
 * - `ssrf_refused`: the SSRF guard refused the target address;
 * - `redirect_not_followed`: a 3xx answer; the redirect was not followed;
 * - `http_error`: any other non-2xx status (4xx, 5xx, 1xx-only).
 */
export const SEND_FAILURES = [
  'timeout',
  'dns_failed',
  'connection_failed',
  'tls_failed',
  'ssrf_refused',
  'redirect_not_followed',
  'http_error',
] as const;
export type SendFailure = (typeof SEND_FAILURES)[number];

/** How an attempt ended, as a delivery's `attempts[].outcome` reports it. */
export const ATTEMPT_OUTCOMES = ['succeeded', ...SEND_FAILURES] as const;
export type AttemptOutcomeName = (typeof ATTEMPT_OUTCOMES)[number];
