import { createHmac } from 'node:crypto';
import { standardWebhooksSignature } from './verify-signature.ts';

/**
 * Signing side of the webhook signature (the receiver side is verify-signature.ts, published as
 * `matricula/webhooks`). Stripe's scheme byte for byte:
 *
 *   X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]
 *   v1 = lowercase hex HMAC-SHA256(key = the whole secret string, `whsec_` included,
 *                                  message = `${t}.${body}` as UTF-8)
 *
 * Every delivery also carries the Standard Webhooks headers (signStandardWebhook), made with the
 * same secret string decoded as base64 (the keys of both schemes: verify-signature.ts).
 *
 * One `v1` per valid secret: during a rotation the old and the new secret both sign (DESIGN §6),
 * so receivers still configured with the old secret keep accepting deliveries.
 */

/**
 * Builds the `X-Service-Signature` value for `body`, signed at `timestamp`.
 *
 * @param body the exact request body that will be sent (UTF-8).
 * @param secrets every currently valid signing secret of the endpoint, newest first.
 * @param timestamp unix time in whole seconds.
 * @throws TypeError when no secret is given or the timestamp is not whole seconds: both are
 *   programming faults, not delivery outcomes.
 */
export function signPayload(body: string, secrets: readonly string[], timestamp: number): string {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new TypeError(`timestamp must be unix time in whole seconds, got ${timestamp}`);
  }
  const usable = secrets.filter((s) => s.length > 0);
  if (usable.length === 0) throw new TypeError('signPayload needs at least one non-empty secret');
  const signedString = `${timestamp}.${body}`;
  const parts = [`t=${timestamp}`];
  for (const secret of usable) {
    parts.push(`v1=${createHmac('sha256', secret).update(signedString, 'utf8').digest('hex')}`);
  }
  return parts.join(',');
}

/**
 * Builds the `webhook-signature` value (Standard Webhooks): `v1,<base64>` per secret, newest
 * first, separated by spaces, over `${id}.${timestamp}.${body}`.
 *
 * @param id the `webhook-id`: the event id, so that it is the same on every retry.
 * @throws TypeError as signPayload, or for a secret that is not `whsec_` + base64.
 */
export function signStandardWebhook(id: string, body: string, secrets: readonly string[], timestamp: number): string {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new TypeError(`timestamp must be unix time in whole seconds, got ${timestamp}`);
  }
  const usable = secrets.filter((s) => s.length > 0);
  if (usable.length === 0) throw new TypeError('signStandardWebhook needs at least one non-empty secret');
  return usable.map((secret) => standardWebhooksSignature(id, timestamp, body, secret)).join(' ');
}

/** Unix seconds of `date`, the `t` of a signature. */
export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
