import type { EventEnvelope, EventType } from '../domain/events.ts';
import type { Environment } from './applications.ts';
import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import type { EventsTable } from './schema.ts';

function toEnvelope(row: EventsTable): EventEnvelope {
  return {
    id: row.id,
    event: row.type as EventType,
    createdAt: row.created_at,
    appId: row.app_id,
    environment: row.environment,
    data: JSON.parse(row.data),
  };
}

export async function insertEvent(db: Db, event: EventEnvelope, orgId: string): Promise<void> {
  await db
    .insertInto('events')
    .values({
      id: event.id,
      app_id: event.appId,
      org_id: orgId,
      environment: event.environment,
      type: event.event,
      data: JSON.stringify(event.data),
      created_at: event.createdAt,
    })
    .execute();
}

export async function findEvent(db: Db, orgId: string, id: string): Promise<EventEnvelope | undefined> {
  const row = await db
    .selectFrom('events')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return row && toEnvelope(row);
}

export async function listEvents(
  db: Db,
  filter: { orgId: string; environment: Environment; appId?: string; type?: EventType },
  page: PageRequest,
): Promise<Page<EventEnvelope>> {
  let query = db
    .selectFrom('events')
    .selectAll()
    .where('org_id', '=', filter.orgId)
    .where('environment', '=', filter.environment);
  if (filter.appId) query = query.where('app_id', '=', filter.appId);
  if (filter.type) query = query.where('type', '=', filter.type);
  return fetchPage(query, 'id', page, toEnvelope);
}
