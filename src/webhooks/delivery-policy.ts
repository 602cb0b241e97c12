import type { EventEnvelope } from '../domain/events.ts';
import type { AttemptRecord } from '../store/webhook-deliveries/recording.ts';
import { nextAttemptDelayMs } from '../domain/backoff.ts';
import type { SendResult } from './sender.ts';

/** The pure decisions of a delivery: what is sent, with which secrets, and what follows an attempt. */

/**
 * The request body: exactly the event envelope of docs/webhooks.md, in its order. `event` is typed by the event
 * schemas (domain/events.ts), the ones the events route answers with: its data is what the
 * producer recorded under its type's schema.
 */
export function envelopeBody(event: EventEnvelope): string {
  const { id, event: name, createdAt, appId, environment, data } = event;
  return JSON.stringify({ id, event: name, createdAt, appId, environment, data });
}

/** The secrets that sign at `now`: the current one, and the previous one until it expires (newest first). */
export function signingSecrets(
  endpoint: { secret: string; previousSecret: string | null; previousSecretExpiresAt: string | null },
  now: Date,
): string[] {
  const previousValid =
    endpoint.previousSecret !== null &&
    endpoint.previousSecretExpiresAt !== null &&
    endpoint.previousSecretExpiresAt > now.toISOString();
  return previousValid ? [endpoint.secret, endpoint.previousSecret!] : [endpoint.secret];
}

/**
 * What a delivery becomes after attempt number `attempt` ended at `finishedAt`: a 2xx succeeds;
 * a 410 fails it and disables the endpoint (the receiver said it is gone for good); anything else
 * is retried after the schedule's jittered delay, or fails after the last retry.
 */
export function afterAttempt(
  result: SendResult,
  attempt: number,
  finishedAt: Date,
  schedule: readonly number[],
  random: () => number,
): Pick<AttemptRecord, 'next'> & { disable: boolean } {
  if (result.ok) return { next: { status: 'succeeded' }, disable: false };
  if (result.status === 410) return { next: { status: 'failed' }, disable: true };
  const delayMs = nextAttemptDelayMs(attempt, schedule, random);
  if (delayMs === null) return { next: { status: 'failed' }, disable: false };
  return { next: { status: 'pending', dueAt: new Date(finishedAt.getTime() + delayMs).toISOString() }, disable: false };
}
