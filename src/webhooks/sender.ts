import { performance } from 'node:perf_hooks';
import { request, type Dispatcher } from 'undici';
import type { EndpointSignal } from '../domain/claim-plan.ts';
import { systemClock, type Clock } from '../domain/clock.ts';

/**
 * One webhook HTTP attempt (docs/webhooks.md): a single POST, acknowledged by any 2xx within the timeout.
 * Redirects are not followed (a 3xx is a failure: following one would let a receiver bounce us to
 * an address the SSRF guard never saw, and the signature was made for the registered URL). The
 * outcome is a value for every network result; the caller decides retries.
 */

export const DEFAULT_TIMEOUT_MS = 10_000;
export const RESPONSE_BODY_LIMIT_BYTES = 2048;
export const WEBHOOK_USER_AGENT = 'Service-Webhooks/1.0';

/** Why an attempt was not acknowledged: the list and its meanings are in domain/delivery-state.ts. */
import type { SendFailure } from '../domain/delivery-state.ts';
export { SEND_FAILURES, type SendFailure } from '../domain/delivery-state.ts';

export interface SendResult {
  /** True for a 2xx answer received in full within the timeout. */
  ok: boolean;
  /** The HTTP status, when one was received. */
  status?: number;
  durationMs: number;
  /** The first RESPONSE_BODY_LIMIT_BYTES of the answer, decoded as UTF-8 ('' without an answer). */
  responseBody: string;
  responseBodyTruncated: boolean;
  error?: SendFailure;
  /** Human-readable detail for the attempt log. */
  errorMessage?: string;
}

export interface SendWebhookInput {
  url: string;
  /** The exact JSON that was signed. */
  body: string;
  headers: Record<string, string>;
  /** Total budget for connect, request, answer headers and answer body. Default 10 s. */
  timeoutMs?: number;
  /** Required, so that no delivery can bypass the SSRF guard (see createGuardedDispatcher). */
  dispatcher: Dispatcher;
  /** Runs the timeout; the system clock by default, a TestClock in tests. */
  clock?: Clock;
}

class AttemptTimeout extends Error {}

/**
 * What an attempt's result says of its endpoint to the claim plan (domain/claim-plan.ts
 * ClaimPlanner.observe): it timed out, it was answered (any status), or neither.
 */
export function endpointSignalOf(result: SendResult): EndpointSignal {
  return result.error === 'timeout' ? 'timed-out' : result.status !== undefined ? 'answered' : 'unanswered';
}

/** Sends one delivery attempt. Never throws for network outcomes. */
export async function sendWebhook(input: SendWebhookInput): Promise<SendResult> {
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = performance.now();
  const controller = new AbortController();
  const clock = input.clock ?? systemClock;
  const timer = clock.setTimeout(() => controller.abort(new AttemptTimeout()), timeoutMs);
  const elapsed = () => Math.round(performance.now() - started);
  let status: number | undefined;
  try {
    const response = await request(input.url, {
      method: 'POST',
      headers: input.headers,
      body: input.body,
      dispatcher: input.dispatcher,
      signal: controller.signal,
    });
    status = response.statusCode;
    const { text, truncated } = await readCapped(response.body, RESPONSE_BODY_LIMIT_BYTES);
    const base = { status, durationMs: elapsed(), responseBody: text, responseBodyTruncated: truncated };
    if (status >= 200 && status < 300) return { ok: true, ...base };
    if (status >= 300 && status < 400) {
      const location = response.headers.location;
      const where = typeof location === 'string' ? ` to ${location.slice(0, 200)}` : '';
      return {
        ok: false,
        ...base,
        error: 'redirect_not_followed',
        errorMessage: `Redirected (${status})${where}; redirects are not followed.`,
      };
    }
    return { ok: false, ...base, error: 'http_error', errorMessage: `The endpoint answered ${status}.` };
  } catch (err) {
    const [error, errorMessage] = controller.signal.aborted
      ? (['timeout', `No complete answer within ${timeoutMs} ms.`] as const)
      : classifyNetworkError(err);
    return {
      ok: false,
      status,
      durationMs: elapsed(),
      responseBody: '',
      responseBodyTruncated: false,
      error,
      errorMessage,
    };
  } finally {
    clock.clearTimeout(timer);
  }
}

/** Reads at most `limit` bytes, then drops the connection rather than download the rest. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > limit) {
      truncated = true;
      body.destroy();
      break;
    }
  }
  const bytes = Buffer.concat(chunks).subarray(0, limit);
  return { text: new TextDecoder('utf-8', { fatal: false }).decode(bytes), truncated };
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA']);
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;

function classifyNetworkError(err: unknown): readonly [SendFailure, string] {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code ?? '';
  const message = e?.message ?? String(err);
  if (code === 'ERR_OUTBOUND_TARGET_REFUSED') return ['ssrf_refused', message];
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return ['timeout', `Could not connect in time: ${message}`];
  if (DNS_CODES.has(code)) return ['dns_failed', message];
  if (TLS_CODES.test(code)) return ['tls_failed', `${code}: ${message}`];
  return ['connection_failed', code ? `${code}: ${message}` : message];
}

export interface DeliveryHeaderInput {
  /** e.g. `verification.completed` */
  eventName: string;
  /** `del_…`: the same on every attempt of one delivery, for receiver deduplication. */
  deliveryId: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** The `X-Service-Signature` value from signPayload. */
  signature: string;
  /** Standard Webhooks: the event id (`webhook-id`, stable across retries), the signing time in
   * unix seconds and the `webhook-signature` value from signStandardWebhook. */
  standard: { id: string; timestamp: number; signature: string };
}

/**
 * The headers of a delivery, exactly: Content-Type, User-Agent, X-Service-Signature,
 * X-Service-Event, X-Service-Delivery, X-Service-Delivery-Attempt, and the Standard Webhooks
 * webhook-id, webhook-timestamp and webhook-signature.
 * @throws TypeError for a delivery id without `del_` or an attempt that is not a whole number >= 1.
 */
export function buildDeliveryHeaders(input: DeliveryHeaderInput): Record<string, string> {
  if (!input.deliveryId.startsWith('del_')) throw new TypeError(`not a delivery id: ${input.deliveryId}`);
  if (!Number.isInteger(input.attempt) || input.attempt < 1)
    throw new TypeError(`bad attempt number: ${input.attempt}`);
  return {
    'Content-Type': 'application/json',
    'User-Agent': WEBHOOK_USER_AGENT,
    'X-Service-Signature': input.signature,
    'X-Service-Event': input.eventName,
    'X-Service-Delivery': input.deliveryId,
    'X-Service-Delivery-Attempt': String(input.attempt),
    'webhook-id': input.standard.id,
    'webhook-timestamp': String(input.standard.timestamp),
    'webhook-signature': input.standard.signature,
  };
}
