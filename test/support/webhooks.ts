import { EventEmitter } from 'node:events';
import { systemClock } from '../../src/domain/clock.ts';
import type { EventData, EventOf, EventType } from '../../src/domain/events.ts';
import { noMetrics, type DeliveryResult, type MetricsRecorder } from '../../src/domain/metrics.ts';
import type { AttemptOutcome } from '../../src/domain/delivery-state.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { insertNewEndpoint } from '../../src/services/webhooks.ts';
import type { Db } from '../../src/store/db.ts';
import type { PendingRecord } from '../../src/store/webhook-deliveries/recording.ts';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../src/webhooks/worker.ts';
import type { Harness, Tenant } from './harness.ts';
import type { RecordedRequest, WebhookReceiver } from './webhook-receiver.ts';

/** Shortcuts for webhook tests over the real API, the real outbox and a real worker. */

export interface CreatedEndpoint {
  id: string;
  appId: string;
  url: string;
  events: string[];
  enabled: boolean;
  secret: string;
}

export async function createEndpoint(
  h: Harness,
  tenant: Tenant,
  url: string,
  events: EventType[] = ['verification.completed'],
): Promise<CreatedEndpoint> {
  const res = await h.app.inject({
    method: 'POST',
    url: '/org/v1/webhooks',
    headers: tenant.auth,
    payload: { appId: tenant.appId, url, events },
  });
  if (res.statusCode !== 201) throw new Error(`create endpoint: ${res.statusCode} ${res.body}`);
  return res.json().data;
}

/** The `data` of verification.completed, as docs/webhooks.md shows it. */
export function completedData(sessionId: string) {
  return {
    sessionId,
    verified: true,
    university: { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' },
    claims: {
      is_active_student: true,
      academic_level: 'undergraduate' as const,
      valid_until: '2027-09-30T00:00:00.000Z',
    },
  };
}

/** Records an event as a state change would: through the app's unit of work and its outbox. */
export async function emitEvent<E extends EventType = 'verification.completed'>(
  h: Harness,
  tenant: Tenant,
  type: E = 'verification.completed' as E,
  data?: EventData<E>,
): Promise<EventOf<E>> {
  const source = { appId: tenant.appId, orgId: tenant.orgId, environment: 'sandbox' as const };
  // Without data: a verification.completed about a new session (the default type).
  const fallback = () => completedData(`sess_${Math.random().toString(36).slice(2)}`) as EventData<E>;
  return h.services.unitOfWork((work) => work.record(source, type, data ?? fallback()));
}

/**
 * Emits `'attempt'` each time a worker built by {@link workerFor} has recorded an attempt (or lost
 * it): the event to wait on, with {@link waitUntil}'s `on`, for a condition on delivery records.
 */
export const workerAttempts = new EventEmitter();

/**
 * A worker over the harness database and clock, subscribed to the app's wake-ups as the
 * composition root wires it; jitter fixed at the middle (no jitter). Its recorded attempts are
 * announced on {@link workerAttempts}, besides reaching `options.metrics`.
 */
export function workerFor(h: Harness, options: Partial<DeliveryWorkerOptions> = {}): DeliveryWorker {
  const inner = options.metrics ?? noMetrics;
  // The worker calls webhookDelivery once an attempt's outcome is recorded (webhooks/worker.ts).
  const metrics: MetricsRecorder = Object.assign(Object.create(inner) as MetricsRecorder, {
    webhookDelivery(input: { result: DeliveryResult }) {
      inner.webhookDelivery(input);
      workerAttempts.emit('attempt');
    },
  });
  return new DeliveryWorker({
    store: h.store,
    clock: h.clock,
    config: h.config,
    wakeups: h.services.wakeups,
    random: () => 0.5,
    ...options,
    metrics,
  });
}

/** Headers exactly as sent, by their sent names. */
export function sentHeaders(request: RecordedRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let i = 0; i < request.rawHeaders.length; i += 2) headers[request.rawHeaders[i]] = request.rawHeaders[i + 1];
  return headers;
}

/** Rejects after `ms` unless `promise` settled: a bound on waiting for real events, never a sleep. */
export function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Waits until `predicate` holds over the receiver's requests, checking at each new request. */
export async function waitForReceiver(
  receiver: WebhookReceiver,
  predicate: (requests: RecordedRequest[]) => boolean,
  ms: number,
  what: string,
): Promise<RecordedRequest[]> {
  return within(
    ms,
    (async () => {
      while (!predicate(receiver.requests)) await receiver.waitForRequests(receiver.requests.length + 1);
      return receiver.requests.slice();
    })(),
    what,
  );
}

/**
 * Waits for a condition on real state (the worker's records, its counts), bounded by `ms`; time
 * itself never passes here. With `on`, the condition is checked at the start and again after each
 * of those events (e.g. `[workerAttempts, 'attempt']`); without, on every turn of the event loop.
 * On timeout it rejects and stops checking: no loop is left running to hold the process open.
 */
export async function waitUntil(
  condition: () => Promise<boolean> | boolean,
  what: string,
  options: { on?: Array<[EventEmitter, string]>; ms?: number } = {},
): Promise<void> {
  const { on = [], ms = 5_000 } = options;
  let stopped = false;
  // An event while the condition is being checked means the check may have read the state before
  // it: check again at once.
  let pending = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    pending = true;
    wake?.();
  };
  const next = (): Promise<void> => {
    if (on.length === 0) return new Promise((resolve) => setImmediate(resolve));
    if (pending) return Promise.resolve();
    return new Promise<void>((resolve) => (wake = resolve));
  };
  const check = async () => {
    for (;;) {
      pending = false;
      if (stopped || (await condition())) return;
      if (stopped) return;
      await next();
      wake = undefined;
    }
  };
  for (const [emitter, event] of on) emitter.on(event, notify);
  try {
    await within(ms, check(), what);
  } finally {
    stopped = true;
    wake?.();
    for (const [emitter, event] of on) emitter.off(event, notify);
  }
}

/** A finished first attempt to record, answered 200 and succeeded unless said otherwise. */
export function answeredRecord(p: {
  deliveryId: string;
  token: string;
  id: string;
  startedAt: string;
  durationMs?: number;
  next?: AttemptOutcome;
}): PendingRecord {
  return {
    deliveryId: p.deliveryId,
    token: p.token,
    record: {
      id: p.id,
      workerId: 'test',
      attempt: {
        attempt: 1,
        startedAt: p.startedAt,
        durationMs: p.durationMs ?? 1,
        statusCode: 200,
        outcome: 'succeeded',
        errorMessage: null,
        responseBody: '',
        responseBodyTruncated: false,
      },
      next: p.next ?? { status: 'succeeded' },
    },
  };
}

/** One organization with one endpoint, written straight to a store (no API, no harness). */
export async function seedEndpoint(db: Db): Promise<void> {
  const org = await createOrganization({ db, clock: systemClock }, { name: 'A', environment: 'sandbox' });
  await db.transaction().execute((trx) =>
    insertNewEndpoint(trx, { clock: systemClock }, org.application, {
      url: 'https://hooks.example/a',
      events: ['verification.completed'],
    }),
  );
}
