import type { EventType } from '../domain/events.ts';
import type { Principal } from '../domain/principal.ts';
import { notFound } from '../errors.ts';
import { findEvent, listEvents } from '../store/events.ts';
import type { PageRequest } from '../store/pagination.ts';
import { applicationForCaller, assertSameEnvironment } from './access.ts';
import type { ServiceDeps } from './deps.ts';

/** Events of the caller's organization and environment, newest first; an `appId` filter must be the caller's. */
export async function listEventsFor(
  deps: ServiceDeps,
  principal: Principal,
  filter: { appId?: string; type?: EventType },
  page: PageRequest,
) {
  if (filter.appId) await applicationForCaller(deps.db, principal, filter.appId, { param: 'appId' });
  return listEvents(deps.db, { orgId: principal.orgId, environment: principal.environment, ...filter }, page);
}

/** One event of the caller's organization (404 otherwise) and environment (403 otherwise). */
export async function eventForCaller(deps: ServiceDeps, principal: Principal, eventId: string) {
  const event = await findEvent(deps.db, principal.orgId, eventId);
  if (!event) throw notFound('event', 'eventId');
  assertSameEnvironment(principal, event.environment);
  return event;
}
