import { EVENT_TYPES, isEventType, type EventData, type EventType } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import { ApiError, invalidRequest, notFound } from '../errors.ts';
import type { Principal } from '../domain/principal.ts';
import type { Application } from '../store/applications.ts';
import type { Db } from '../store/db.ts';
import type { PageRequest } from '../store/pagination.ts';
import type { DeliveryStatus } from '../domain/delivery-state.ts';
import { findDelivery, listDeliveries, type Delivery } from '../store/webhook-deliveries/read-model.ts';
import { requeueDelivery } from '../store/webhook-deliveries/recording.ts';
import { deleteEndpointDeliveries } from '../store/webhook-deliveries/retention.ts';
import {
  deleteEndpoint,
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  updateEndpoint,
  type EndpointChanges,
  type WebhookEndpoint,
} from '../store/webhooks.ts';
import { newSigningSecret } from '../webhooks/secrets.ts';
import { checkTargetUrl } from '../outbound/ssrf.ts';
import { applicationForCaller, assertSameEnvironment } from './access.ts';
import {
  ENDPOINT_DELIVERY_BATCH,
  purgeInBatches,
  WAITED_SHARE,
  type BatchOptions,
  type RunOptions,
} from './batches.ts';
import type { ServiceDeps } from './deps.ts';

/** How long the secret replaced by a rotation keeps signing (docs/webhooks.md, Signing secrets). */
export const PREVIOUS_SECRET_VALIDITY_MS = 24 * 60 * 60 * 1000;

/** The public record of an endpoint: never its secrets. */
export function endpointView(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    appId: endpoint.appId,
    environment: endpoint.environment,
    url: endpoint.url,
    description: endpoint.description,
    events: endpoint.events,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason,
    previousSecretExpiresAt: endpoint.previousSecretExpiresAt,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt,
  };
}

/** The record with its signing secret: the response of creation and rotation only. */
export function endpointWithSecret(endpoint: WebhookEndpoint) {
  return { ...endpointView(endpoint), secret: endpoint.secret };
}

/** Subscribed events: names of the catalogue (domain/events.ts), each once. */
export function checkedEvents(events: string[], param: string): EventType[] {
  const unknown = events.filter((name) => !isEventType(name));
  if (unknown.length > 0) {
    throw invalidRequest(
      `Unknown event ${unknown.map((n) => `"${n}"`).join(', ')}. The events are: ${EVENT_TYPES.join(', ')}.`,
      param,
    );
  }
  return [...new Set(events)] as EventType[];
}

/**
 * What to do instead when a URL is refused only because it is on a developer's own machine (http://,
 * loopback or a private network): a receiver there is the first thing an integrator tries.
 */
export const LOCAL_RECEIVER_HINT =
  'To receive webhooks on your own machine, run `matricula listen --forward-to ' +
  "http://localhost:3000/hooks` (it forwards this service's events, signed), or start the service with " +
  'OUTBOUND_ALLOW_PRIVATE_TARGETS=true (development only; WEBHOOK_ALLOW_PRIVATE_TARGETS is the older name).';

/** The SSRF guard at registration: a refused URL is a 400 that says why. Returns the normalized URL. */
export async function checkedUrl(deps: Pick<ServiceDeps, 'config'>, url: string, param: string): Promise<string> {
  const check = await checkTargetUrl(url, { allowPrivateTargets: deps.config.outboundAllowPrivateTargets });
  if (!check.ok) {
    const hint =
      !deps.config.outboundAllowPrivateTargets && (await isLocalReceiver(url)) ? ` ${LOCAL_RECEIVER_HINT}` : '';
    throw new ApiError('invalid_request', `Webhook URL refused: ${check.message}${hint}`, {
      param,
      reason: check.reason,
    });
  }
  return check.url.href;
}

/**
 * A receiver on the developer's own machine or network: allowed with private targets (metadata
 * never is), and refused over https:// too for its address (loopback, private, link-local).
 */
async function isLocalReceiver(url: string): Promise<boolean> {
  if (!(await checkTargetUrl(url, { allowPrivateTargets: true })).ok) return false;
  const https = new URL(url);
  https.protocol = 'https:';
  const strict = await checkTargetUrl(https.href, { allowPrivateTargets: false });
  return !strict.ok && strict.reason === 'forbidden_address';
}

export interface EndpointInput {
  url: string;
  events: EventType[];
  description?: string | null;
}

/**
 * Checks a new endpoint's URL and events, before any transaction (resolving the host takes a
 * network round trip that must not hold a database lock).
 */
export async function prepareEndpoint(
  deps: Pick<ServiceDeps, 'config'>,
  input: { url: string; events: string[]; description?: string | null },
  params: { url: string; events: string },
): Promise<EndpointInput> {
  const events = checkedEvents(input.events, params.events);
  const url = await checkedUrl(deps, input.url, params.url);
  return { url, events, description: input.description ?? null };
}

/** Inserts a prepared endpoint of `app` with a fresh signing secret (inside the caller's transaction). */
export async function insertNewEndpoint(
  db: Db,
  deps: Pick<ServiceDeps, 'clock'>,
  app: Application,
  input: EndpointInput,
): Promise<WebhookEndpoint> {
  const now = deps.clock.now().toISOString();
  const endpoint: WebhookEndpoint = {
    id: newId('webhookEndpoint', deps.clock),
    appId: app.id,
    orgId: app.orgId,
    environment: app.environment,
    url: input.url,
    description: input.description ?? null,
    events: input.events,
    enabled: true,
    disabledReason: null,
    secret: newSigningSecret(),
    previousSecret: null,
    previousSecretExpiresAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await insertEndpoint(db, endpoint);
  return endpoint;
}

export async function createEndpoint(
  deps: ServiceDeps,
  principal: Principal,
  input: { appId: string; url: string; events: string[]; description?: string },
): Promise<WebhookEndpoint> {
  const app = await applicationForCaller(deps.db, principal, input.appId, { param: 'appId', mustBeActive: true });
  const prepared = await prepareEndpoint(deps, input, { url: 'url', events: 'events' });
  return deps.db.transaction().execute((trx) => insertNewEndpoint(trx, deps, app, prepared));
}

/** An endpoint of the caller's organization (404 otherwise) and environment (403 otherwise). */
export async function endpointForCaller(deps: ServiceDeps, principal: Principal, id: string): Promise<WebhookEndpoint> {
  const endpoint = await findEndpoint(deps.db, principal.orgId, id);
  if (!endpoint) throw notFound('webhook endpoint', 'webhookId');
  assertSameEnvironment(principal, endpoint.environment);
  return endpoint;
}

export async function listEndpointsFor(
  deps: ServiceDeps,
  principal: Principal,
  filter: { appId?: string },
  page: PageRequest,
) {
  if (filter.appId) await applicationForCaller(deps.db, principal, filter.appId, { param: 'appId' });
  return listEndpoints(
    deps.db,
    { orgId: principal.orgId, environment: principal.environment, appId: filter.appId },
    page,
  );
}

export interface EndpointUpdate {
  url?: string;
  events?: string[];
  enabled?: boolean;
  description?: string | null;
}

/** Changes url, events, enabled or description. Enabling clears why it was disabled. */
export async function updateEndpointFor(
  deps: ServiceDeps,
  principal: Principal,
  id: string,
  update: EndpointUpdate,
): Promise<WebhookEndpoint> {
  const endpoint = await endpointForCaller(deps, principal, id);
  const changes: EndpointChanges = {};
  if (update.events !== undefined) changes.events = checkedEvents(update.events, 'events');
  if (update.url !== undefined) changes.url = await checkedUrl(deps, update.url, 'url');
  if (update.description !== undefined) changes.description = update.description;
  if (update.enabled !== undefined && update.enabled !== endpoint.enabled) {
    changes.enabled = update.enabled;
    changes.disabledReason = update.enabled ? null : 'manual';
  }
  const now = deps.clock.now().toISOString();
  await deps.unitOfWork(async (work) => {
    await updateEndpoint(work.db, endpoint.id, changes, now);
    // Deliveries held while the endpoint was disabled are due again.
    if (changes.enabled) work.deliveriesDue();
  });
  return { ...endpoint, ...changes, updatedAt: now };
}

export async function deleteEndpointFor(
  deps: ServiceDeps,
  principal: Principal,
  id: string,
  options: Pick<BatchOptions, 'batchSize'> & Pick<RunOptions, 'pacing'> = {},
): Promise<{ id: string; deletedAt: string }> {
  const endpoint = await endpointForCaller(deps, principal, id);
  // Disabled first, so that no new delivery is written for it meanwhile; then its deliveries go
  // in batches (an endpoint may have millions), each a short transaction; then the endpoint.
  // Stopped half-way (a crash), it stays disabled, and deleting it again finishes the work.
  await updateEndpoint(
    deps.db,
    endpoint.id,
    { enabled: false, disabledReason: 'manual' },
    deps.clock.now().toISOString(),
  );
  await purgeInBatches((limit) => deleteEndpointDeliveries(deps.db, endpoint.id, limit), {
    batchSize: options.batchSize ?? ENDPOINT_DELIVERY_BATCH,
    maxBatches: Number.POSITIVE_INFINITY,
    db: deps.db,
    // The caller waits for it: a pause as long as each batch, not a background job's nine times.
    share: WAITED_SHARE,
    pacing: options.pacing,
  });
  await deps.db.transaction().execute((trx) => deleteEndpoint(trx, endpoint.id));
  return { id: endpoint.id, deletedAt: deps.clock.now().toISOString() };
}

/**
 * A new signing secret. The replaced one keeps signing for 24 h (deliveries then carry one `v1`
 * per secret), so receivers can switch without losing a delivery. A secret replaced earlier is
 * dropped at once: at most two secrets sign.
 */
export async function rotateSecret(deps: ServiceDeps, principal: Principal, id: string): Promise<WebhookEndpoint> {
  const endpoint = await endpointForCaller(deps, principal, id);
  const now = deps.clock.now();
  const changes: EndpointChanges = {
    secret: newSigningSecret(),
    previousSecret: endpoint.secret,
    previousSecretExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_VALIDITY_MS).toISOString(),
  };
  await updateEndpoint(deps.db, endpoint.id, changes, now.toISOString());
  return { ...endpoint, ...changes, updatedAt: now.toISOString() };
}

function assertEnabled(endpoint: WebhookEndpoint): void {
  if (!endpoint.enabled)
    throw new ApiError(
      'invalid_state',
      `Webhook endpoint ${endpoint.id} is disabled; enable it first (PATCH enabled: true).`,
    );
}

/** Records a `webhook.test` event and its delivery to this endpoint only, whatever it subscribes to. */
export async function sendTestEvent(deps: ServiceDeps, principal: Principal, id: string): Promise<Delivery> {
  const endpoint = await endpointForCaller(deps, principal, id);
  assertEnabled(endpoint);
  const data: EventData<'webhook.test'> = {
    endpointId: endpoint.id,
    message: 'This is a test event sent from the Matricula API.',
  };
  const { deliveries } = await deps.unitOfWork((work) => work.recordFor(endpoint, 'webhook.test', data, [endpoint.id]));
  const [delivery] = deliveries;
  return (await findDelivery(deps.db, endpoint.id, delivery.id))!;
}

export async function listDeliveriesFor(
  deps: ServiceDeps,
  principal: Principal,
  id: string,
  filter: { status?: DeliveryStatus },
  page: PageRequest,
) {
  const endpoint = await endpointForCaller(deps, principal, id);
  return listDeliveries(deps.db, endpoint.id, filter, page);
}

export async function getDelivery(
  deps: ServiceDeps,
  principal: Principal,
  id: string,
  deliveryId: string,
): Promise<Delivery> {
  const endpoint = await endpointForCaller(deps, principal, id);
  const delivery = await findDelivery(deps.db, endpoint.id, deliveryId);
  if (!delivery) throw notFound('delivery', 'deliveryId');
  return delivery;
}

/** A manual retry: the delivery is due now, as one more attempt (a failed one gets no further schedule). */
export async function retryDelivery(
  deps: ServiceDeps,
  principal: Principal,
  id: string,
  deliveryId: string,
): Promise<Delivery> {
  const endpoint = await endpointForCaller(deps, principal, id);
  assertEnabled(endpoint);
  const delivery = await findDelivery(deps.db, endpoint.id, deliveryId);
  if (!delivery) throw notFound('delivery', 'deliveryId');
  const requeued = await deps.unitOfWork(async (work) => {
    if (!(await requeueDelivery(work.db, delivery.id, deps.clock.now().toISOString()))) return false;
    work.deliveriesDue();
    return true;
  });
  if (!requeued)
    throw new ApiError(
      'invalid_state',
      `Delivery ${delivery.id} is being sent right now; retry it once this attempt is over.`,
    );
  return (await findDelivery(deps.db, endpoint.id, delivery.id))!;
}
