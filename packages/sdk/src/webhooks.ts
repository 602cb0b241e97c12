import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './openapi.js';

/**
 * Receiver-side verification of Matricula webhook signatures: `@matricula/sdk/webhooks`, also
 * reachable as `Matricula.webhooks` and, for existing users, as the service's `matricula/webhooks`.
 *
 * This module stands alone (node:crypto only; the import above is of types) so that integrators can
 * use it, or copy it, without the rest of the SDK. Every delivery carries two signatures of the same body, made with the
 * same signing secret string; either is enough to authenticate it.
 *
 * 1. `X-Service-Signature` (docs/webhooks.md; Stripe's scheme byte for byte):
 *
 *      X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]
 *      v1 = lowercase hex HMAC-SHA256( key = the whole signing secret string, `whsec_` included, as UTF-8,
 *                                      message = `${t}.` + the raw request body bytes )
 *
 * 2. Standard Webhooks (https://www.standardwebhooks.com, what `standardwebhooks` and `svix` verify):
 *
 *      webhook-id: <event id, evt_…, the same on every retry>
 *      webhook-timestamp: <unix seconds>
 *      webhook-signature: v1,<base64>[ v1,<base64>…]
 *      v1 = base64 HMAC-SHA256( key = base64-decode(the secret after `whsec_`),
 *                               message = `${id}.${timestamp}.` + the raw request body bytes )
 *
 * During a secret rotation each header carries one `v1` per valid secret; a delivery is authentic
 * when any `v1` matches any secret you pass.
 */

/** Default tolerance between the signature timestamp and the receiver's clock (docs/webhooks.md: 300 s). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The name of the header that carries the signature, as Node lower-cases it. */
export const SIGNATURE_HEADER = 'x-service-signature';

/** The Standard Webhooks headers, as the spec names them (lower case). */
export const STANDARD_WEBHOOKS_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/** The prefix of a signing secret; Standard Webhooks decodes what follows it as base64. */
export const SECRET_PREFIX = 'whsec_';

/** Why a signature was not accepted. Stable codes: match on them, not on `message`. */
export type SignatureRejectionReason =
  | 'missing_header'
  /** Standard Webhooks: `webhook-signature` without `webhook-id` or `webhook-timestamp`. */
  | 'missing_webhook_id'
  | 'malformed_header'
  | 'missing_timestamp'
  | 'missing_signature'
  | 'timestamp_outside_tolerance'
  | 'signature_mismatch';

/** The outcome of {@link verifyWebhookSignature}: a value, never an exception. */
export type SignatureVerification =
  | {
      ok: true;
      /** The signed timestamp, in unix seconds. */
      timestamp: number;
      /** Which signatures were checked (headers form only): every scheme present must verify. */
      schemes?: SignatureScheme[];
      /** `webhook-id`, the event id, when the Standard Webhooks headers were checked: deduplicate on it. */
      webhookId?: string;
    }
  | { ok: false; reason: SignatureRejectionReason; message: string; scheme?: SignatureScheme };

/** `x-service` is the `X-Service-Signature` header; `standard-webhooks` the three `webhook-*` headers. */
export type SignatureScheme = 'x-service' | 'standard-webhooks';

/**
 * Request headers: Node's `req.headers` (any case of names is accepted), a plain object, or a
 * Fetch API `Headers`.
 */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export interface VerifyOptions {
  /** Largest accepted |now - t| in seconds, in both directions. Default 300. */
  toleranceSeconds?: number;
  /** The receiver's "now": a Date, or milliseconds since the epoch (like `Date.now()`). */
  now?: Date | number;
}

interface ParsedHeader {
  timestamp?: number;
  signatures: string[];
}

const HEX_SHA256 = /^[0-9a-f]{64}$/i;
const UNIX_SECONDS = /^\d{1,15}$/;

/**
 * Checks a delivery's signature against the raw request body.
 *
 * @param rawBody the body exactly as received (before any JSON parsing): a Buffer, or the string
 *   decoded as UTF-8. Re-serialized JSON will not match.
 * @param headers either all the request headers (`req.headers`, a plain object or a Fetch
 *   `Headers`): then every scheme present (`X-Service-Signature`, the `webhook-*` headers) is
 *   checked, at least one must be, and all present must verify; or just the
 *   `X-Service-Signature` value (`req.headers['x-service-signature']`; an array of repeated headers
 *   is read as one comma-separated list).
 * @param secret the endpoint's signing secret (`whsec_…`), or several during a rotation.
 * @throws TypeError only when no usable secret or an invalid tolerance is given: a receiver
 *   misconfiguration, not a bad delivery.
 */
export function verifyWebhookSignature(
  rawBody: string | Buffer,
  headers: string | string[] | undefined | WebhookHeaders,
  secret: string | string[],
  options: VerifyOptions = {},
): SignatureVerification {
  const secrets = normalizeSecrets(secret);
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
    throw new TypeError('toleranceSeconds must be a finite number >= 0');
  }
  const nowSeconds = Math.floor(toMillis(options.now) / 1000);
  if (headers === undefined || typeof headers === 'string' || Array.isArray(headers)) {
    return verifyServiceSignature(rawBody, headers, secrets, nowSeconds, toleranceSeconds);
  }
  const read = headerReader(headers);
  const serviceHeader = read(SIGNATURE_HEADER);
  const standardSignature = read(STANDARD_WEBHOOKS_HEADERS.signature);
  if (serviceHeader === undefined && standardSignature === undefined) {
    return reject(
      'missing_header',
      'Neither X-Service-Signature nor webhook-signature is present: pass the request headers.',
    );
  }
  const schemes: SignatureScheme[] = [];
  let timestamp = 0;
  let webhookId: string | undefined;
  if (standardSignature !== undefined) {
    const id = read(STANDARD_WEBHOOKS_HEADERS.id);
    const t = read(STANDARD_WEBHOOKS_HEADERS.timestamp);
    const result = verifyStandardWebhook(rawBody, id, t, standardSignature, secrets, nowSeconds, toleranceSeconds);
    if (!result.ok) return { ...result, scheme: 'standard-webhooks' };
    schemes.push('standard-webhooks');
    timestamp = result.timestamp;
    webhookId = id;
  }
  if (serviceHeader !== undefined) {
    const result = verifyServiceSignature(rawBody, serviceHeader, secrets, nowSeconds, toleranceSeconds);
    if (!result.ok) return { ...result, scheme: 'x-service' };
    schemes.push('x-service');
    timestamp = result.timestamp;
  }
  return { ok: true, timestamp, schemes, ...(webhookId !== undefined ? { webhookId } : {}) };
}

function verifyServiceSignature(
  rawBody: string | Buffer,
  signatureHeader: string | string[] | undefined,
  secrets: string[],
  nowSeconds: number,
  toleranceSeconds: number,
): SignatureVerification {
  const header = Array.isArray(signatureHeader) ? signatureHeader.join(',') : signatureHeader;
  if (header === undefined || header.trim() === '') {
    return reject('missing_header', 'The X-Service-Signature header is missing.');
  }
  const parsed = parseHeader(header);
  if (typeof parsed === 'string') return reject('malformed_header', parsed);
  if (parsed.timestamp === undefined) {
    return reject('missing_timestamp', 'The signature header has no t= timestamp.');
  }
  if (parsed.signatures.length === 0) {
    return reject('missing_signature', 'The signature header has no v1= signature.');
  }
  // The signature is checked before the clock, so that "outside tolerance" is only ever said of a
  // genuine delivery (a replay or a skewed clock), never of a forgery.
  if (!anySignatureMatches(rawBody, parsed.timestamp, parsed.signatures, secrets)) {
    return reject(
      'signature_mismatch',
      'No v1 signature matches the body with the given secret(s). Use the raw body as received and the whole whsec_ secret.',
    );
  }
  return checkTolerance(parsed.timestamp, nowSeconds, toleranceSeconds);
}

function verifyStandardWebhook(
  rawBody: string | Buffer,
  id: string | undefined,
  timestampHeader: string | undefined,
  signatureHeader: string,
  secrets: string[],
  nowSeconds: number,
  toleranceSeconds: number,
): SignatureVerification {
  if (id === undefined || id === '' || timestampHeader === undefined) {
    return reject('missing_webhook_id', 'webhook-signature needs webhook-id and webhook-timestamp.');
  }
  if (!UNIX_SECONDS.test(timestampHeader.trim())) {
    return reject('missing_timestamp', 'webhook-timestamp must be a unix time in whole seconds.');
  }
  const timestamp = Number(timestampHeader.trim());
  // `v1,<base64>` entries separated by spaces; other versions (v1a, a future v2) are ignored.
  const candidates = signatureHeader
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => Buffer.from(entry.slice(3), 'utf8'));
  if (candidates.length === 0) {
    return reject('missing_signature', 'webhook-signature has no v1,<base64> signature.');
  }
  let matched = false;
  for (const secret of secrets) {
    const key = standardWebhooksKey(secret);
    if (key === undefined) continue;
    const expected = Buffer.from(standardWebhooksV1(key, id, timestamp, rawBody), 'utf8');
    for (const candidate of candidates) {
      // The length of a base64 HMAC-SHA256 is public (44); only equal lengths are compared.
      if (candidate.length === expected.length && timingSafeEqual(expected, candidate)) matched = true;
    }
  }
  if (!matched) {
    return reject(
      'signature_mismatch',
      'No webhook-signature v1 matches the body with the given secret(s). Use the raw body as received and the whole whsec_ secret.',
    );
  }
  return checkTolerance(timestamp, nowSeconds, toleranceSeconds);
}

function checkTolerance(timestamp: number, nowSeconds: number, toleranceSeconds: number): SignatureVerification {
  const skew = nowSeconds - timestamp;
  if (Math.abs(skew) > toleranceSeconds) {
    const direction = skew > 0 ? `${skew} s in the past` : `${-skew} s in the future`;
    return reject(
      'timestamp_outside_tolerance',
      `The signature timestamp is ${direction}; the tolerance is ${toleranceSeconds} s.`,
    );
  }
  return { ok: true, timestamp };
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The Standard Webhooks HMAC key of a signing secret: the base64 after `whsec_` decoded (a secret
 * of 44 base62 characters gives 33 bytes; one of 43, made before Standard Webhooks support, 32).
 * Undefined when the secret is not base64.
 */
export function standardWebhooksKey(secret: string): Buffer | undefined {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!BASE64.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : undefined;
}

/**
 * One Standard Webhooks signature, `v1,<base64>`, of `body` sent as message `id` at `timestamp`.
 * @throws TypeError when the secret is not `whsec_` + base64.
 */
export function standardWebhooksSignature(
  id: string,
  timestamp: number,
  body: string | Buffer,
  secret: string,
): string {
  const key = standardWebhooksKey(secret);
  if (key === undefined) throw new TypeError('a Standard Webhooks secret is whsec_ followed by base64');
  return `v1,${standardWebhooksV1(key, id, timestamp, body)}`;
}

function standardWebhooksV1(key: Buffer, id: string, timestamp: number, rawBody: string | Buffer): string {
  const hmac = createHmac('sha256', key);
  hmac.update(`${id}.${timestamp}.`, 'utf8');
  if (typeof rawBody === 'string') hmac.update(rawBody, 'utf8');
  else hmac.update(rawBody);
  return hmac.digest('base64');
}

/** Reads one header by lower-case name from any of the accepted header shapes. */
function headerReader(headers: WebhookHeaders): (name: string) => string | undefined {
  if (typeof headers.get === 'function') {
    const fetchHeaders = headers as { get(name: string): string | null };
    return (name) => fetchHeaders.get(name) ?? undefined;
  }
  const lowered = new Map<string, string | string[] | undefined>();
  const entries = Object.entries(headers as Record<string, string | string[] | undefined>);
  for (const [name, value] of entries) lowered.set(name.toLowerCase(), value);
  return (name) => {
    const value = lowered.get(name);
    if (value === undefined) return undefined;
    // Repeated headers: X-Service-Signature items are comma-separated, webhook-signature entries space-separated.
    return Array.isArray(value) ? value.join(name === SIGNATURE_HEADER ? ',' : ' ') : String(value);
  };
}

function normalizeSecrets(secret: string | string[]): string[] {
  const secrets = (Array.isArray(secret) ? secret : [secret]).filter((s) => typeof s === 'string' && s.length > 0);
  if (secrets.length === 0) throw new TypeError('verifyWebhookSignature needs a non-empty secret');
  return secrets;
}

/** Parses `t=…,v1=…`; unknown schemes (say a future `v2=`) are ignored. A string is an error. */
function parseHeader(header: string): ParsedHeader | string {
  const result: ParsedHeader = { signatures: [] };
  for (const rawItem of header.split(',')) {
    const item = rawItem.trim();
    const eq = item.indexOf('=');
    if (eq <= 0) return `Signature header item "${item.slice(0, 40)}" is not key=value.`;
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (key === 't') {
      if (result.timestamp !== undefined) return 'The signature header has more than one t=.';
      if (!UNIX_SECONDS.test(value)) return 't= must be a unix time in whole seconds.';
      result.timestamp = Number(value);
    } else if (key === 'v1') {
      if (!HEX_SHA256.test(value)) return 'v1= must be 64 hexadecimal characters.';
      result.signatures.push(value.toLowerCase());
    }
  }
  return result;
}

function anySignatureMatches(
  rawBody: string | Buffer,
  timestamp: number,
  candidates: string[],
  secrets: string[],
): boolean {
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(computeV1(rawBody, timestamp, secret), 'utf8');
    for (const candidate of candidates) {
      // Both are 64 ASCII hex characters (checked by the parser), so the lengths are equal, as
      // timingSafeEqual requires. No early exit: every pair is compared.
      if (timingSafeEqual(expected, Buffer.from(candidate, 'utf8'))) matched = true;
    }
  }
  return matched;
}

function computeV1(rawBody: string | Buffer, timestamp: number, secret: string): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(`${timestamp}.`, 'utf8');
  // A Buffer is hashed as is, so bytes that are not valid UTF-8 are never re-encoded.
  if (typeof rawBody === 'string') hmac.update(rawBody, 'utf8');
  else hmac.update(rawBody);
  return hmac.digest('hex');
}

function toMillis(now: Date | number | undefined): number {
  if (now === undefined) return Date.now();
  return typeof now === 'number' ? now : now.getTime();
}

function reject(reason: SignatureRejectionReason, message: string): SignatureVerification {
  return { ok: false, reason, message };
}

/** A webhook body: one of the events of the OpenAPI document's `webhooks` section. */
export type WebhookEvent = components['schemas']['Event'];

/**
 * Thrown by {@link constructEvent} for a delivery that is not authentic (or not a JSON event):
 * answer it with a 400 and do not act on it. `reason` is one of {@link SignatureRejectionReason},
 * or `invalid_payload` for a signed body that is not a JSON event.
 */
export class WebhookVerificationError extends Error {
  readonly reason: SignatureRejectionReason | 'invalid_payload';
  /** Which signature failed, when the headers carried several. */
  readonly scheme?: SignatureScheme;

  constructor(reason: WebhookVerificationError['reason'], message: string, scheme?: SignatureScheme) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
    this.scheme = scheme;
  }
}

/**
 * Verifies a delivery and returns its event, parsed and typed; throws {@link
 * WebhookVerificationError} when it is not authentic. Stripe's `constructEvent` and Svix's
 * `verify`, for both of our signature schemes: pass all the request headers (`req.headers`, a
 * plain object or a Fetch `Headers`) and every scheme present is checked, or just the
 * `X-Service-Signature` value.
 *
 * @param rawBody the body exactly as received, before any JSON parsing.
 * @param secret the endpoint's signing secret (`whsec_…`), or several during a rotation.
 * @throws TypeError when no usable secret is given (a receiver misconfiguration).
 */
export function constructEvent(
  rawBody: string | Buffer,
  headers: string | string[] | undefined | WebhookHeaders,
  secret: string | string[],
  options: VerifyOptions = {},
): WebhookEvent {
  const outcome = verifyWebhookSignature(rawBody, headers, secret, options);
  if (!outcome.ok) throw new WebhookVerificationError(outcome.reason, outcome.message, outcome.scheme);
  let event: unknown;
  try {
    event = JSON.parse(typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'The signed body is not JSON.');
  }
  const { id, event: name } = (event ?? {}) as { id?: unknown; event?: unknown };
  if (typeof id !== 'string' || typeof name !== 'string') {
    throw new WebhookVerificationError('invalid_payload', 'The signed body is not a Matricula event (id, event).');
  }
  return event as WebhookEvent;
}

/**
 * The receiver helpers in one object, as `Matricula.webhooks` (static) and on every client's
 * `matricula.webhooks`: `verify` and its Stripe-named twin `constructEvent` return the event or
 * throw; `verifySignature` returns an outcome value and never throws for a bad delivery.
 */
export const webhooks = {
  verify: constructEvent,
  constructEvent,
  verifySignature: verifyWebhookSignature,
} as const;
