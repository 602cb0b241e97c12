import { createHmac } from 'node:crypto';

/**
 * Signing side of the webhook signature (the receiver side is the SDK's packages/sdk/src/webhooks.ts,
 * `@matricula/sdk/webhooks`, also published as `matricula/webhooks`). Stripe's scheme byte for byte:
 *
 *   X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]
 *   v1 = lowercase hex HMAC-SHA256(key = the whole secret string, `whsec_` included,
 *                                  message = `${t}.${body}` as UTF-8)
 *
 * Every delivery also carries the Standard Webhooks headers (signStandardWebhook), made with the
 * same secret string decoded as base64 (the keys of both schemes: docs/webhooks.md). The
 * receiver side is written separately, so that tests check one against the other, and both against
 * the `standardwebhooks`, `svix` and `stripe` libraries.
 *
 * One `v1` per valid secret: during a rotation the old and the new secret both sign (docs/webhooks.md),
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

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const SECRET_PREFIX = 'whsec_';

/**
 * The Standard Webhooks HMAC key of a signing secret: the base64 after `whsec_` decoded (a secret
 * of 44 base62 characters gives 33 bytes; one of 43, made before Standard Webhooks support, 32).
 * @throws TypeError when the secret is not `whsec_` + base64.
 */
export function standardWebhooksKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
  if (key.length === 0) throw new TypeError('a Standard Webhooks secret is whsec_ followed by base64');
  return key;
}

function standardWebhooksSignature(id: string, timestamp: number, body: string, secret: string): string {
  const hmac = createHmac('sha256', standardWebhooksKey(secret)).update(`${id}.${timestamp}.${body}`, 'utf8');
  return `v1,${hmac.digest('base64')}`;
}

/** Unix seconds of `date`, the `t` of a signature. */
export function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
