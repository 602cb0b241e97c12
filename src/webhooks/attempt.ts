import type { Dispatcher } from 'undici';
import type { Config } from '../config.ts';
import type { BoundedCache } from '../domain/bounded-cache.ts';
import type { Clock } from '../domain/clock.ts';
import { newId } from '../domain/ids.ts';
import { checkTargetUrlShape } from '../outbound/ssrf.ts';
import type { ClaimedDelivery } from '../store/webhook-deliveries/claim.ts';
import type { AttemptRecorder } from './attempt-recorder.ts';
import { afterAttempt, envelopeBody, signingSecrets } from './delivery-policy.ts';
import { buildDeliveryHeaders, sendWebhook, type SendResult } from './sender.ts';
import { signPayload, signStandardWebhook, unixSeconds } from './signature.ts';

/**
 * One attempt of a claimed delivery (docs/webhooks.md): the body signed with the endpoint's
 * current secrets, sent through the guarded dispatcher, judged by the delivery policy (retry,
 * give up, disable on 410), recorded by its lease holder, and logged when it failed. The worker
 * (worker.ts) decides which deliveries to attempt and when; this is what one attempt does.
 */

/** What became of one delivery: `lost` when sent but not recorded (the lease was lost, the endpoint deleted). */
export type Outcome = 'succeeded' | 'retrying' | 'failed' | 'lost';

export interface AttemptContext {
  clock: Clock;
  config: Pick<Config, 'webhookRetrySchedule' | 'outboundAllowPrivateTargets'>;
  dispatcher: Dispatcher;
  recorder: AttemptRecorder;
  workerId: string;
  log: { warn(obj: object, msg: string): void };
  /** Jitter source in [0, 1) of the retry schedule. */
  random: () => number;
  /** Per-attempt budget; sender.ts's default when absent. */
  timeoutMs?: number;
  /** Called as soon as the answer (or its absence) is known, before it is recorded. */
  onSent?: (delivery: ClaimedDelivery, result: SendResult) => void;
  /**
   * What the URL shape check said of each endpoint URL under this context's policy (null: no
   * refusal), so that a URL is parsed and checked once, not on every send.
   */
  urlRefusals?: BoundedCache<string, string | null>;
}

/** Sends one claimed delivery and records the attempt; rejects only when recording fails. */
export async function attemptDelivery(delivery: ClaimedDelivery, context: AttemptContext): Promise<Outcome> {
  const { clock, config } = context;
  const startedAt = clock.now();
  const result = await sendDelivery(delivery, startedAt, context);
  context.onSent?.(delivery, result);
  const finishedAt = clock.now();
  const { next, disable } = afterAttempt(
    result,
    delivery.attempt,
    finishedAt,
    config.webhookRetrySchedule,
    context.random,
  );
  const recorded = await context.recorder.record({
    deliveryId: delivery.id,
    token: delivery.leaseToken,
    record: {
      id: newId('attempt', clock),
      workerId: context.workerId,
      attempt: {
        attempt: delivery.attempt,
        startedAt: startedAt.toISOString(),
        durationMs: result.durationMs,
        statusCode: result.status ?? null,
        outcome: result.ok ? 'succeeded' : (result.error ?? 'http_error'),
        errorMessage: result.errorMessage ?? null,
        responseBody: result.responseBody,
        responseBodyTruncated: result.responseBodyTruncated,
      },
      next,
      ...(disable ? { disableEndpoint: { endpointId: delivery.endpoint.id } } : {}),
    },
  });
  if (!recorded) return 'lost';
  // One line per failed attempt, once it is recorded (a lost lease logs nothing: the holder does).
  if (!result.ok)
    context.log.warn(
      {
        endpointId: delivery.endpoint.id,
        deliveryId: delivery.id,
        eventId: delivery.event.id,
        attempt: delivery.attempt,
        statusCode: result.status ?? null,
        outcome: result.error ?? 'http_error',
        error: result.errorMessage ?? null,
        nextAttemptAt: next.status === 'pending' ? next.dueAt : null,
        endpointDisabled: disable,
      },
      disable
        ? 'webhook endpoint answered 410 Gone: disabled'
        : next.status === 'pending'
          ? 'webhook delivery attempt failed; retrying'
          : 'webhook delivery attempt failed; no attempts left',
    );
  return next.status === 'pending' ? 'retrying' : next.status;
}

/** The signed request of one delivery, sent; the URL's shape is checked again under today's policy first. */
function sendDelivery(delivery: ClaimedDelivery, now: Date, context: AttemptContext): Promise<SendResult> {
  const { endpoint, event } = delivery;
  // The policy may have tightened since registration: the cheap checks run before every send,
  // the address checks inside the dispatcher at connect time.
  const refusal = urlRefusal(endpoint.url, context);
  if (refusal !== null) {
    return Promise.resolve({
      ok: false,
      durationMs: 0,
      responseBody: '',
      responseBodyTruncated: false,
      error: 'ssrf_refused',
      errorMessage: refusal,
    });
  }
  const body = envelopeBody(event);
  const secrets = signingSecrets(endpoint, now);
  const timestamp = unixSeconds(now);
  const headers = buildDeliveryHeaders({
    eventName: event.event,
    deliveryId: delivery.id,
    attempt: delivery.attempt,
    signature: signPayload(body, secrets, timestamp),
    standard: { id: event.id, timestamp, signature: signStandardWebhook(event.id, body, secrets, timestamp) },
  });
  return sendWebhook({
    url: endpoint.url,
    body,
    headers,
    dispatcher: context.dispatcher,
    timeoutMs: context.timeoutMs,
    clock: context.clock,
  });
}

/**
 * Why the URL shape check refuses `url` under the context's policy (null: it does not), from the
 * context's cache when it has one: the check parses the URL, and in a drain's CPU profile it was
 * the largest cost of our own per send after the database's.
 */
function urlRefusal(url: string, context: AttemptContext): string | null {
  const cached = context.urlRefusals?.get(url);
  if (cached !== undefined) return cached;
  const shape = checkTargetUrlShape(url, { allowPrivateTargets: context.config.outboundAllowPrivateTargets });
  const refusal = shape.ok ? null : shape.message;
  context.urlRefusals?.set(url, refusal);
  return refusal;
}
