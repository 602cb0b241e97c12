import { HttpClient, type MatriculaOptions, type Query, type RequestOptions } from './http.js';
import type { components, operations } from './openapi.js';
import { MatriculaError } from './errors.js';
import { constructEvent, webhooks as webhookHelpers, type WebhookEvent } from './webhooks.js';

export { MatriculaError, type ErrorCode, type ErrorReason } from './errors.js';
export type { MatriculaOptions, RequestOptions } from './http.js';
export type { components, operations, paths, webhooks } from './openapi.js';
export {
  constructEvent,
  verifyWebhookSignature,
  WebhookVerificationError,
  type SignatureRejectionReason,
  type SignatureScheme,
  type SignatureVerification,
  type VerifyOptions,
  type WebhookEvent,
  type WebhookHeaders,
} from './webhooks.js';

type Schemas = components['schemas'];

/**
 * A result as the service gives it, narrowed by `verified`: a verified result names the student's
 * university and no failure; one not verified says why (`failureReason`). The OpenAPI schema types
 * the fields one by one (`university: University | null`), which a strict program cannot narrow.
 * A redacted session's result keeps `verified` and erases the university: see {@link Session}.
 */
export type Narrowed<R extends { verified: boolean; university: unknown; failureReason: unknown }> =
  | (Omit<R, 'verified' | 'university' | 'failureReason' | 'failureMessage'> & {
      verified: true;
      university: NonNullable<R['university']>;
      failureReason: null;
      failureMessage: null;
    })
  | (Omit<R, 'verified' | 'failureReason'> & { verified: false; failureReason: NonNullable<R['failureReason']> });

/** The result of a completed session that is not redacted. */
export type SessionResult = Narrowed<Schemas['SessionResult']>;
/** The result of a redacted session: the university and claim values are erased, `verified` stays. */
export type RedactedSessionResult = Schemas['SessionResult'];

/**
 * A session. Once `status` is `completed` it has a `result`; while it is not `redacted`, that
 * result is a {@link SessionResult}, so `if (s.status === 'completed' && !s.redacted &&
 * s.result.verified) s.result.university.domain` type-checks in strict mode.
 */
export type Session = Schemas['Session'] extends infer S
  ? S extends { status: 'completed'; result: unknown }
    ? | (Omit<S, 'result' | 'redacted'> & { redacted: false; result: SessionResult })
      | (Omit<S, 'result' | 'redacted'> & { redacted: true; result: RedactedSessionResult })
    : S
  : never;
export type CreatedSession = Schemas['CreatedSession'];
export type SessionStatus = Schemas['SessionStatus'];
export type ClaimName = Schemas['ClaimName'];
export type App = Schemas['App'];
export type AppDetails = Schemas['AppDetails'];
export type CreatedApp = Schemas['CreatedApp'];
export type Key = Schemas['Key'];
export type CreatedKey = Schemas['CreatedKey'];
export type RevokedKey = Schemas['RevokedKey'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type DeletedWebhookEndpoint = Schemas['DeletedWebhookEndpoint'];
export type Delivery = Schemas['Delivery'];
export type Event = Schemas['Event'];
export type EventType = Schemas['EventType'];
/** The outcome of `POST /verification/v1/verify`, narrowed by `verified` like a session's result. */
export type VerificationResult = Narrowed<Schemas['VerificationResult']>;

/** The JSON body an operation takes. */
type BodyOf<O extends keyof operations> = operations[O] extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : never;
/** The query parameters an operation takes. */
type QueryOf<O extends keyof operations> = operations[O] extends { parameters: { query?: infer Q } }
  ? NonNullable<Q>
  : never;
/** List filters: the query without the cursor, which the iterator manages. */
type ListParams<O extends keyof operations> = Omit<QueryOf<O>, 'startingAfter'> & { startingAfter?: string };

interface ListEnvelope<T> {
  data: T[];
  pagination: { hasMore: boolean; nextCursor: string | null };
}

/**
 * The items of a list, page after page, as an async iterable: `for await (const s of
 * matricula.sessions.list())`. Pages are fetched as the loop needs them (`limit` is the page
 * size); `toArray()` collects them all.
 */
export class PageIterator<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (startingAfter: string | undefined) => Promise<ListEnvelope<T>>) {}

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.fetchPage(cursor);
      yield* page.data;
      if (!page.pagination.hasMore || page.pagination.nextCursor === null) return;
      cursor = page.pagination.nextCursor;
    }
  }

  /** Every item, across pages; `max` stops early. */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const item of this) {
      out.push(item);
      if (out.length >= max) break;
    }
    return out;
  }
}

const segment = (id: string) => encodeURIComponent(id);

abstract class Resource {
  constructor(protected readonly http: HttpClient) {}

  protected paginate<T>(path: string, params: object | undefined, options?: RequestOptions): PageIterator<T> {
    return new PageIterator<T>((startingAfter) =>
      this.http.requestEnvelope<ListEnvelope<T>>({
        method: 'GET',
        path,
        query: { ...(params as Query | undefined), ...(startingAfter === undefined ? {} : { startingAfter }) },
        options,
      }),
    );
  }
}

export class Sessions extends Resource {
  /** Starts a verification: show the student `qrPayload` or send them to `verificationUrl`. */
  create(body: BodyOf<'createSession'>, options?: RequestOptions): Promise<CreatedSession> {
    return this.http.request({ method: 'POST', path: '/verification/v1/sessions', body, options });
  }
  /** The session and, once `status` is `completed`, its `result`. */
  retrieve(sessionId: string, options?: RequestOptions): Promise<Session> {
    return this.http.request({ method: 'GET', path: `/verification/v1/sessions/${segment(sessionId)}`, options });
  }
  list(params?: ListParams<'listSessions'>, options?: RequestOptions): PageIterator<Session> {
    return this.paginate('/verification/v1/sessions', params, options);
  }
  cancel(sessionId: string, options?: RequestOptions): Promise<Session> {
    return this.http.request({
      method: 'POST',
      path: `/verification/v1/sessions/${segment(sessionId)}/cancel`,
      options,
    });
  }
  /**
   * Erases what the session learnt and what you attached to it (the result's claims and
   * university, metadata, clientReference), here and in its stored events; `redacted` becomes
   * true. Only a session that has ended; redacting it again returns it unchanged.
   */
  redact(sessionId: string, options?: RequestOptions): Promise<Session> {
    return this.http.request({
      method: 'POST',
      path: `/verification/v1/sessions/${segment(sessionId)}/redact`,
      options,
    });
  }
}

export class Apps extends Resource {
  create(body: BodyOf<'createApp'>, options?: RequestOptions): Promise<CreatedApp> {
    return this.http.request({ method: 'POST', path: '/org/v1/apps', body, options });
  }
  retrieve(appId: string, options?: RequestOptions): Promise<AppDetails> {
    return this.http.request({ method: 'GET', path: `/org/v1/apps/${segment(appId)}`, options });
  }
  update(appId: string, body: BodyOf<'updateApp'>, options?: RequestOptions): Promise<AppDetails> {
    return this.http.request({ method: 'PATCH', path: `/org/v1/apps/${segment(appId)}`, body, options });
  }
  /** Archives the application: it leaves the list and its keys stop working. */
  archive(appId: string, options?: RequestOptions): Promise<AppDetails> {
    return this.http.request({ method: 'DELETE', path: `/org/v1/apps/${segment(appId)}`, options });
  }
  list(params?: ListParams<'listApps'>, options?: RequestOptions): PageIterator<App> {
    return this.paginate('/org/v1/apps', params, options);
  }
}

export class Keys extends Resource {
  /** A new secret key; `rawSecret` is in this answer only. */
  create(body: BodyOf<'createKey'>, options?: RequestOptions): Promise<CreatedKey> {
    return this.http.request({ method: 'POST', path: '/org/v1/keys', body, options });
  }
  list(params?: ListParams<'listKeys'>, options?: RequestOptions): PageIterator<Key> {
    return this.paginate('/org/v1/keys', params, options);
  }
  revoke(keyId: string, options?: RequestOptions): Promise<RevokedKey> {
    return this.http.request({ method: 'DELETE', path: `/org/v1/keys/${segment(keyId)}`, options });
  }
}

export class Events extends Resource {
  retrieve(eventId: string, options?: RequestOptions): Promise<Event> {
    return this.http.request({ method: 'GET', path: `/org/v1/events/${segment(eventId)}`, options });
  }
  list(params?: ListParams<'listEvents'>, options?: RequestOptions): PageIterator<Event> {
    return this.paginate('/org/v1/events', params, options);
  }
}

export class WebhookDeliveries extends Resource {
  list(webhookId: string, params?: ListParams<'listWebhookDeliveries'>, options?: RequestOptions) {
    return this.paginate<Delivery>(`/org/v1/webhooks/${segment(webhookId)}/deliveries`, params, options);
  }
  retrieve(webhookId: string, deliveryId: string, options?: RequestOptions): Promise<Delivery> {
    return this.http.request({
      method: 'GET',
      path: `/org/v1/webhooks/${segment(webhookId)}/deliveries/${segment(deliveryId)}`,
      options,
    });
  }
  /** Sends the delivery again now. */
  retry(webhookId: string, deliveryId: string, options?: RequestOptions): Promise<Delivery> {
    return this.http.request({
      method: 'POST',
      path: `/org/v1/webhooks/${segment(webhookId)}/deliveries/${segment(deliveryId)}/retry`,
      options,
    });
  }
}

/**
 * The signing secret is in the answer that creates or rotates it, and the service never stores it:
 * the replay of that answer (after a retry with the same Idempotency-Key) carries null. Typed
 * `string`, so a null is refused here rather than handed on.
 */
async function withSecret(answer: Promise<WebhookEndpointWithSecret>): Promise<WebhookEndpointWithSecret> {
  const endpoint = await answer;
  if (typeof endpoint.secret !== 'string')
    throw new MatriculaError({
      message:
        'The answer was the replay of an earlier request, and the signing secret is shown only once: rotate the secret to get a new one.',
      status: 200,
      code: 'secret_not_replayed',
    });
  return endpoint;
}

export class Webhooks extends Resource {
  readonly deliveries: WebhookDeliveries;

  constructor(http: HttpClient) {
    super(http);
    this.deliveries = new WebhookDeliveries(http);
  }

  /** Registers an endpoint; its signing `secret` is in this answer only. */
  create(body: BodyOf<'createWebhookEndpoint'>, options?: RequestOptions): Promise<WebhookEndpointWithSecret> {
    return withSecret(this.http.request({ method: 'POST', path: '/org/v1/webhooks', body, options }));
  }
  retrieve(webhookId: string, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.http.request({ method: 'GET', path: `/org/v1/webhooks/${segment(webhookId)}`, options });
  }
  update(webhookId: string, body: BodyOf<'updateWebhookEndpoint'>, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.http.request({ method: 'PATCH', path: `/org/v1/webhooks/${segment(webhookId)}`, body, options });
  }
  delete(webhookId: string, options?: RequestOptions): Promise<DeletedWebhookEndpoint> {
    return this.http.request({ method: 'DELETE', path: `/org/v1/webhooks/${segment(webhookId)}`, options });
  }
  list(params?: ListParams<'listWebhookEndpoints'>, options?: RequestOptions): PageIterator<WebhookEndpoint> {
    return this.paginate('/org/v1/webhooks', params, options);
  }
  /** A new signing secret; the old one keeps signing for 24 h. */
  rotateSecret(webhookId: string, options?: RequestOptions): Promise<WebhookEndpointWithSecret> {
    return withSecret(
      this.http.request({ method: 'POST', path: `/org/v1/webhooks/${segment(webhookId)}/rotate-secret`, options }),
    );
  }
  /** Sends a webhook.test event to this endpoint. */
  test(webhookId: string, options?: RequestOptions): Promise<Delivery> {
    return this.http.request({ method: 'POST', path: `/org/v1/webhooks/${segment(webhookId)}/test`, options });
  }

  /** Receiver side: the event of an authentic delivery, or a WebhookVerificationError (see `Matricula.webhooks`). */
  verify(...args: Parameters<typeof constructEvent>): WebhookEvent {
    return constructEvent(...args);
  }
  /** The same as `verify`, under Stripe's name. */
  constructEvent(...args: Parameters<typeof constructEvent>): WebhookEvent {
    return constructEvent(...args);
  }
}

/**
 * The Matricula API client.
 *
 * ```ts
 * const matricula = new Matricula({ apiKey: process.env.MATRICULA_API_KEY!, baseUrl: 'https://…' });
 * const session = await matricula.sessions.create({ appId, purpose: 'Student discount', requiredClaims: ['is_active_student'] });
 * ```
 */
export class Matricula {
  /**
   * Receiver-side webhook verification, without a client (no API key needed):
   * `Matricula.webhooks.verify(rawBody, req.headers, secret)` returns the event or throws a
   * WebhookVerificationError; it checks `X-Service-Signature` and the Standard Webhooks headers.
   */
  static readonly webhooks = webhookHelpers;
  readonly apps: Apps;
  readonly keys: Keys;
  readonly sessions: Sessions;
  readonly events: Events;
  readonly webhooks: Webhooks;
  readonly #http: HttpClient;

  constructor(options: MatriculaOptions) {
    this.#http = new HttpClient(options);
    this.apps = new Apps(this.#http);
    this.keys = new Keys(this.#http);
    this.sessions = new Sessions(this.#http);
    this.events = new Events(this.#http);
    this.webhooks = new Webhooks(this.#http);
  }

  /** Verifies one presentation directly, without a session; a negative outcome is `verified: false`. */
  verify(body: BodyOf<'verifyPresentation'>, options?: RequestOptions): Promise<VerificationResult> {
    return this.#http.request({ method: 'POST', path: '/verification/v1/verify', body, options });
  }
}

export default Matricula;
