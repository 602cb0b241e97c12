import { MatriculaError } from './errors.js';

export interface MatriculaOptions {
  /** A secret API key, `sk_test_…` or `sk_live_…`. */
  apiKey: string;
  /** Where the service runs, e.g. `https://matricula.example.edu`. */
  baseUrl: string;
  /** Retries after a network error, a 429 or a 5xx; default 2. */
  maxRetries?: number;
  /** Per attempt, in milliseconds; default 30 000. */
  timeoutMs?: number;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  /** Sent as `Idempotency-Key` on a POST; generated when absent, so that retries are safe. */
  idempotencyKey?: string;
  /** Aborts the request, retries included. */
  signal?: AbortSignal;
}

export type Query = Record<string, string | number | boolean | undefined>;

interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query;
  body?: unknown;
  options?: RequestOptions;
}

/** The longest wait between two attempts, whatever Retry-After says. */
const MAX_DELAY_MS = 60_000;

/** Seconds or an HTTP date, as Retry-After allows; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Exponential backoff with full jitter: 0.5 s, 1 s, 2 s … capped at 8 s. */
function backoffMs(attempt: number): number {
  return Math.random() * Math.min(8000, 500 * 2 ** attempt);
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    });
  });

const retryableStatus = (status: number) => status === 429 || status >= 500;

/** The transport: URL, headers, JSON, retries and the error envelope. */
export class HttpClient {
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #maxRetries: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: MatriculaOptions) {
    if (!options.apiKey) throw new TypeError('Matricula: apiKey is required');
    if (!options.baseUrl) throw new TypeError('Matricula: baseUrl is required');
    this.#apiKey = options.apiKey;
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#maxRetries = options.maxRetries ?? 2;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  url(path: string, query?: Query): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) search.set(name, String(value));
    const qs = search.toString();
    return `${this.#baseUrl}${path}${qs ? `?${qs}` : ''}`;
  }

  /** One API call: the `data` of a success envelope, or a MatriculaError. */
  async request<T>(call: Call): Promise<T> {
    const body = await this.requestEnvelope<{ data: T }>(call);
    return body.data;
  }

  /** One API call: the whole success envelope (lists need `pagination`). */
  async requestEnvelope<T>(call: Call): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: 'application/json',
    };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    // The same key on every attempt: a retry of a request that did arrive is replayed, not repeated.
    if (call.method === 'POST')
      headers['idempotency-key'] = call.options?.idempotencyKey ?? globalThis.crypto.randomUUID();
    const url = this.url(call.path, call.query);
    const payload = call.body === undefined ? undefined : JSON.stringify(call.body);

    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.#maxRetries;
      let response: Response;
      try {
        const signals = [AbortSignal.timeout(this.#timeoutMs), ...(call.options?.signal ? [call.options.signal] : [])];
        response = await this.#fetch(url, {
          method: call.method,
          headers,
          body: payload,
          signal: AbortSignal.any(signals),
        });
      } catch (error) {
        if (call.options?.signal?.aborted || last) throw MatriculaError.network(error);
        await sleep(backoffMs(attempt), call.options?.signal);
        continue;
      }
      if (retryableStatus(response.status) && !last) {
        await response.body?.cancel();
        const delay = retryAfterMs(response.headers.get('retry-after')) ?? backoffMs(attempt);
        await sleep(Math.min(delay, MAX_DELAY_MS), call.options?.signal);
        continue;
      }
      const requestId = response.headers.get('x-request-id') ?? undefined;
      const text = await response.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      if (!response.ok) throw MatriculaError.fromResponse(response.status, json, requestId);
      if (json === undefined) throw new MatriculaError({ status: response.status, message: 'Not JSON', requestId });
      return json as T;
    }
  }
}
