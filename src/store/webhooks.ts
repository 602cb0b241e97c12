import type { EventType } from '../domain/events.ts';
import type { Environment } from '../domain/environment.ts';
import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import { prepareQuery } from './prepared.ts';
import type { WebhookEndpointsTable } from './schema.ts';

/** Endpoints (webhook subscriptions) of an application; deliveries live in webhook-deliveries/. */

export type DisabledReason = 'manual' | 'endpoint_gone';

export interface WebhookEndpoint {
  id: string;
  appId: string;
  orgId: string;
  environment: Environment;
  url: string;
  description: string | null;
  events: EventType[];
  enabled: boolean;
  disabledReason: DisabledReason | null;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toEndpoint(row: WebhookEndpointsTable): WebhookEndpoint {
  return {
    id: row.id,
    appId: row.app_id,
    orgId: row.org_id,
    environment: row.environment,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.events) as EventType[],
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: row.previous_secret_expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertEndpoint(db: Db, endpoint: WebhookEndpoint): Promise<void> {
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: endpoint.id,
      app_id: endpoint.appId,
      org_id: endpoint.orgId,
      environment: endpoint.environment,
      url: endpoint.url,
      description: endpoint.description,
      events: JSON.stringify(endpoint.events),
      enabled: endpoint.enabled ? 1 : 0,
      disabled_reason: endpoint.disabledReason,
      secret: endpoint.secret,
      previous_secret: endpoint.previousSecret,
      previous_secret_expires_at: endpoint.previousSecretExpiresAt,
      created_at: endpoint.createdAt,
      updated_at: endpoint.updatedAt,
    })
    .execute();
}

/** The endpoint if it belongs to `orgId` (another organization's does not exist for the caller). */
export async function findEndpoint(db: Db, orgId: string, id: string): Promise<WebhookEndpoint | undefined> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return row && toEndpoint(row);
}

export async function listEndpoints(
  db: Db,
  filter: { orgId: string; environment: Environment; appId?: string },
  page: PageRequest,
): Promise<Page<WebhookEndpoint>> {
  let query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('org_id', '=', filter.orgId)
    .where('environment', '=', filter.environment);
  if (filter.appId) query = query.where('app_id', '=', filter.appId);
  return fetchPage(query, 'id', page, toEndpoint);
}

export type EndpointChanges = Partial<
  Pick<
    WebhookEndpoint,
    | 'url'
    | 'description'
    | 'events'
    | 'enabled'
    | 'disabledReason'
    | 'secret'
    | 'previousSecret'
    | 'previousSecretExpiresAt'
  >
>;

export async function updateEndpoint(db: Db, id: string, changes: EndpointChanges, updatedAt: string): Promise<void> {
  const { events, enabled, disabledReason, previousSecret, previousSecretExpiresAt, ...same } = changes;
  await db
    .updateTable('webhook_endpoints')
    .set({
      ...same,
      ...(events !== undefined ? { events: JSON.stringify(events) } : {}),
      ...(enabled !== undefined ? { enabled: enabled ? 1 : 0 } : {}),
      ...(disabledReason !== undefined ? { disabled_reason: disabledReason } : {}),
      ...(previousSecret !== undefined ? { previous_secret: previousSecret } : {}),
      ...(previousSecretExpiresAt !== undefined ? { previous_secret_expires_at: previousSecretExpiresAt } : {}),
      updated_at: updatedAt,
    })
    .where('id', '=', id)
    .execute();
}

/**
 * Deletes an endpoint with its deliveries and their attempt log (the events stay). A worker
 * sending one of them at that moment finds its delivery gone and records nothing.
 */
export async function deleteEndpoint(db: Db, id: string): Promise<void> {
  const deliveries = db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id);
  await db.deleteFrom('webhook_attempts').where('delivery_id', 'in', deliveries).execute();
  await db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
  await db.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
}

// Read for every event recorded (services/unit-of-work.ts): compiled once, a named statement on PostgreSQL.
const enabledEndpointsOfApp = prepareQuery('enabled_endpoints_of_app', (db, p: { appId: string }) =>
  db.selectFrom('webhook_endpoints').select(['id', 'events']).where('app_id', '=', p.appId).where('enabled', '=', 1),
);

/** Enabled endpoints of an application subscribed to `type`. */
export async function subscribedEndpoints(db: Db, appId: string, type: EventType): Promise<Array<{ id: string }>> {
  const { rows } = await enabledEndpointsOfApp.execute(db, { appId });
  // An application has a handful of endpoints: filtering the JSON list here keeps the SQL portable.
  return rows.filter((row) => (JSON.parse(row.events) as string[]).includes(type)).map((row) => ({ id: row.id }));
}

/** Number of endpoints per application. */
export async function endpointCounts(db: Db, appIds: string[]): Promise<Map<string, number>> {
  if (appIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select(['app_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('app_id', 'in', appIds)
    .groupBy('app_id')
    .execute();
  return new Map(rows.map((row) => [row.app_id, Number(row.n)]));
}
