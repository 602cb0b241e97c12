import { ApiError, notFound } from '../errors.ts';
import type { Principal } from '../domain/principal.ts';
import type { Db } from '../store/db.ts';
import { findApplication, type Application } from '../store/applications.ts';

/**
 * Tenancy and environments (docs/security.md): another organization's application does not exist for
 * the caller (404); one of the other environment may not be touched (403); an archived one can be
 * read but not acted on (409).
 */
export async function applicationForCaller(
  db: Db,
  principal: Principal,
  appId: string,
  options: { param?: string; mustBeActive?: boolean } = {},
): Promise<Application> {
  const app = await findApplication(db, principal.orgId, appId);
  if (!app) throw notFound('application', options.param);
  assertSameEnvironment(principal, app.environment);
  if (options.mustBeActive && app.status !== 'active')
    throw new ApiError('invalid_state', `Application ${app.id} is archived.`, { param: options.param });
  return app;
}

export function assertSameEnvironment(principal: Principal, environment: string): void {
  if (environment !== principal.environment) {
    throw new ApiError('forbidden', `A ${principal.environment} key cannot act on ${environment} resources.`);
  }
}
