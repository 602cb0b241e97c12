import { newId } from '../domain/ids.ts';
import { invalidRequest } from '../errors.ts';
import type { Principal } from '../domain/principal.ts';
import { keysOfApplication } from '../store/api-keys.ts';
import {
  countsFor,
  insertApplication,
  listActiveApplications,
  updateApplication as updateApplicationRow,
  type Application,
} from '../store/applications.ts';
import { type Environment } from '../domain/environment.ts';
import type { Db } from '../store/db.ts';
import { applicationMetrics } from '../store/metrics.ts';
import type { PageRequest } from '../store/pagination.ts';
import { applicationForCaller, assertSameEnvironment } from './access.ts';
import type { ServiceDeps } from './deps.ts';
import type { AnswerMethod } from '../domain/identity-providers.ts';
import { findAnswerMethods, setAnswerMethods } from '../store/answer-methods.ts';
import { endpointWithSecret, insertNewEndpoint, prepareEndpoint } from './webhooks.ts';

export interface NewApplication {
  name: string;
  environment?: Environment;
  description?: string | null;
}

/** Builds and inserts an application row (inside the caller's transaction). */
export async function insertNewApplication(
  db: Db,
  deps: Pick<ServiceDeps, 'clock'>,
  orgId: string,
  input: NewApplication,
): Promise<Application> {
  const now = deps.clock.now().toISOString();
  const app: Application = {
    id: newId('application', deps.clock),
    orgId,
    name: input.name,
    description: input.description ?? null,
    environment: input.environment ?? 'sandbox',
    status: 'active',
    createdAt: now,
    updatedAt: now,
  };
  await insertApplication(db, app);
  return app;
}

/**
 * Creates an application and, with `webhookUrl`, its webhook endpoint, in one transaction: a
 * refused URL or an unknown event is a 400 and creates nothing. The endpoint's secret is in the
 * result (shown once).
 */
export async function createApplication(
  deps: ServiceDeps,
  principal: Principal,
  input: NewApplication & { webhookUrl?: string; webhookEvents?: string[] },
) {
  const { webhookUrl, webhookEvents, ...fields } = input;
  assertSameEnvironment(principal, fields.environment ?? 'sandbox');
  if (webhookUrl === undefined && webhookEvents !== undefined)
    throw invalidRequest('webhookEvents needs webhookUrl: the endpoint to send them to.', 'webhookUrl');
  if (webhookUrl !== undefined && webhookEvents === undefined)
    throw invalidRequest('webhookUrl needs webhookEvents: the events to subscribe it to.', 'webhookEvents');
  const endpointInput =
    webhookUrl !== undefined
      ? await prepareEndpoint(
          deps,
          { url: webhookUrl, events: webhookEvents! },
          { url: 'webhookUrl', events: 'webhookEvents' },
        )
      : undefined;
  return deps.db.transaction().execute(async (trx) => {
    const app = await insertNewApplication(trx, deps, principal.orgId, fields);
    if (!endpointInput) return { ...app, keyCount: 0, webhookCount: 0 };
    const endpoint = await insertNewEndpoint(trx, deps, app, endpointInput);
    return { ...app, keyCount: 0, webhookCount: 1, webhook: endpointWithSecret(endpoint) };
  });
}

export function listApplications(deps: ServiceDeps, principal: Principal, page: PageRequest) {
  return listActiveApplications(deps.db, principal.orgId, page);
}

export async function applicationDetails(deps: ServiceDeps, app: Application) {
  const [counts, keys, metrics, allowedMethods] = await Promise.all([
    countsFor(deps.db, [app.id]),
    keysOfApplication(deps.db, app.id),
    applicationMetrics(deps.db, app.id, deps.clock.now()),
    findAnswerMethods(deps.db, app.id),
  ]);
  return { ...app, ...counts.get(app.id)!, keys, metrics, allowedMethods: allowedMethods ?? null };
}

export async function getApplication(deps: ServiceDeps, principal: Principal, appId: string) {
  return applicationDetails(deps, await applicationForCaller(deps.db, principal, appId, { param: 'appId' }));
}

export async function updateApplication(
  deps: ServiceDeps,
  principal: Principal,
  appId: string,
  changes: { name?: string; description?: string | null; allowedMethods?: AnswerMethod[] | null },
) {
  const app = await applicationForCaller(deps.db, principal, appId, { param: 'appId', mustBeActive: true });
  const { allowedMethods, ...row } = changes;
  await updateApplicationRow(deps.db, app.id, row, deps.clock.now().toISOString());
  if (allowedMethods !== undefined) await setAnswerMethods(deps.db, app.id, allowedMethods ?? undefined);
  return getApplication(deps, principal, appId);
}

/** Archives: the app leaves the list and its keys stop authenticating (checked on every request). */
export async function archiveApplication(deps: ServiceDeps, principal: Principal, appId: string) {
  const app = await applicationForCaller(deps.db, principal, appId, { param: 'appId' });
  if (app.status !== 'archived')
    await updateApplicationRow(deps.db, app.id, { status: 'archived' }, deps.clock.now().toISOString());
  return applicationDetails(deps, { ...app, status: 'archived' });
}
