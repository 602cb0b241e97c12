import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Receiver-side verification of Matricula webhook signatures, published as `matricula/webhooks`.
 *
 * This module stands alone (node:crypto only) so that integrators can use it, or copy it, without
 * the rest of the service. The scheme is Stripe's, byte for byte:
 *
 *   X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]
 *   v1 = lowercase hex HMAC-SHA256( key = the endpoint's whole signing secret string,
 *                                   message = `${t}.` + the raw request body bytes )
 *
 * The HMAC key is the secret exactly as shown to you, `whsec_` prefix included (not decoded).
 * During a secret rotation the header carries one `v1` per valid secret; a delivery is authentic
 * when any `v1` matches any secret you pass.
 */

/** Default tolerance between the signature timestamp and the receiver's clock (spec §8). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The name of the header that carries the signature, as Node lower-cases it. */
export const SIGNATURE_HEADER = 'x-service-signature';

/** Why a signature was not accepted. Stable codes: match on them, not on `message`. */
export type SignatureRejectionReason =
  | 'missing_header'
  | 'malformed_header'
  | 'missing_timestamp'
  | 'missing_signature'
  | 'timestamp_outside_tolerance'
  | 'signature_mismatch';

/** The outcome of {@link verifyWebhookSignature}: a value, never an exception. */
export type SignatureVerification =
  | { ok: true; /** The signed `t`, in unix seconds. */ timestamp: number }
  | { ok: false; reason: SignatureRejectionReason; message: string };

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
 * Checks a delivery's `X-Service-Signature` header against the raw request body.
 *
 * @param rawBody the body exactly as received (before any JSON parsing): a Buffer, or the string
 *   decoded as UTF-8. Re-serialized JSON will not match.
 * @param signatureHeader the header value; Node's `req.headers['x-service-signature']` can be passed
 *   as is (an array of repeated headers is read as one comma-separated list).
 * @param secret the endpoint's signing secret (`whsec_…`), or several during a rotation.
 * @throws TypeError only when no usable secret or an invalid tolerance is given: a receiver
 *   misconfiguration, not a bad delivery.
 */
export function verifyWebhookSignature(
  rawBody: string | Buffer,
  signatureHeader: string | string[] | undefined,
  secret: string | string[],
  options: VerifyOptions = {},
): SignatureVerification {
  const secrets = normalizeSecrets(secret);
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
    throw new TypeError('toleranceSeconds must be a finite number >= 0');
  }
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
  const nowSeconds = Math.floor(toMillis(options.now) / 1000);
  const skew = nowSeconds - parsed.timestamp;
  if (Math.abs(skew) > toleranceSeconds) {
    const direction = skew > 0 ? `${skew} s in the past` : `${-skew} s in the future`;
    return reject(
      'timestamp_outside_tolerance',
      `The signature timestamp is ${direction}; the tolerance is ${toleranceSeconds} s.`,
    );
  }
  return { ok: true, timestamp: parsed.timestamp };
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
