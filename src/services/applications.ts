import { newId } from '../domain/ids.ts';
import { checkOrigin } from '../domain/return-url.ts';
import { invalidRequest } from '../errors.ts';
import type { Principal } from '../domain/principal.ts';
import { keysOfApplication } from '../store/api-keys.ts';
import {
  countsFor,
  insertApplication,
  listActiveApplications,
  updateApplication as updateApplicationRow,
  type Application,
  type ApplicationSummary,
} from '../store/applications.ts';
import { findOrganization } from '../store/organizations.ts';
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
  allowedReturnOrigins?: string[];
}

/**
 * `allowedReturnOrigins` checked and normalized (domain/return-url.ts): a refused one is a 400
 * naming it; https only unless OUTBOUND_ALLOW_PRIVATE_TARGETS.
 */
export function checkedOrigins(deps: Pick<ServiceDeps, 'config'>, origins: readonly string[]): string[] {
  const out: string[] = [];
  for (const origin of origins) {
    const check = checkOrigin(origin, deps.config.outboundAllowPrivateTargets);
    if (!check.ok) throw invalidRequest(check.message, 'allowedReturnOrigins');
    if (!out.includes(check.value)) out.push(check.value);
  }
  return out;
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
    allowedReturnOrigins: input.allowedReturnOrigins ?? [],
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
  if (fields.allowedReturnOrigins) fields.allowedReturnOrigins = checkedOrigins(deps, fields.allowedReturnOrigins);
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
  changes: {
    name?: string;
    description?: string | null;
    allowedReturnOrigins?: string[];
    allowedMethods?: AnswerMethod[] | null;
  },
) {
  const app = await applicationForCaller(deps.db, principal, appId, { param: 'appId', mustBeActive: true });
  const { allowedMethods, ...row } = changes;
  const checked = row.allowedReturnOrigins
    ? { ...row, allowedReturnOrigins: checkedOrigins(deps, row.allowedReturnOrigins) }
    : row;
  await updateApplicationRow(deps.db, app.id, checked, deps.clock.now().toISOString());
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

export type { Application, ApplicationSummary } from '../store/applications.ts';

/**
 * Every active application of an organization, all pages (CLI `apps list`, the operator's view);
 * undefined when there is no such organization.
 */
export async function activeApplicationsOfOrganization(
  deps: Pick<ServiceDeps, 'db'>,
  orgId: string,
): Promise<ApplicationSummary[] | undefined> {
  if (!(await findOrganization(deps.db, orgId))) return undefined;
  const apps: ApplicationSummary[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await listActiveApplications(deps.db, orgId, { limit: 100, startingAfter: cursor });
    apps.push(...page.items);
    if (!page.nextCursor) return apps;
    cursor = page.nextCursor;
  }
}
