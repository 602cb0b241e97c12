import type { Insertable } from 'kysely';
import type { EventEnvelope, EventType } from '../domain/events.ts';
import type { Environment } from '../domain/environment.ts';
import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import type { EventsTable } from './schema.ts';

function toEnvelope(row: Omit<EventsTable, 'session_id'>): EventEnvelope {
  return {
    id: row.id,
    event: row.type,
    createdAt: row.created_at,
    appId: row.app_id,
    environment: row.environment,
    // Written by the unit of work, whose producers' types are the event schemas (domain/events.ts).
    data: JSON.parse(row.data) as unknown,
  } as EventEnvelope;
}

/** The stored row of an event, for the caller to insert, alone or in a larger statement. */
export function eventRow(event: EventEnvelope, orgId: string): Insertable<EventsTable> {
  return {
    id: event.id,
    app_id: event.appId,
    org_id: orgId,
    environment: event.environment,
    type: event.event,
    data: JSON.stringify(event.data),
    created_at: event.createdAt,
    // Every event about a session names it in data.sessionId (domain/events.ts); redaction finds them here.
    session_id: 'sessionId' in event.data && typeof event.data.sessionId === 'string' ? event.data.sessionId : null,
  };
}

export async function insertEvent(db: Db, event: EventEnvelope, orgId: string): Promise<void> {
  await db.insertInto('events').values(eventRow(event, orgId)).execute();
}

/**
 * Rewrites the stored `data` of every event about a session through `redact`; returns the events
 * it changed. Deliveries are built from the stored event when sent, so a delivery still due sends
 * the redacted data.
 */
export async function redactSessionEvents(
  db: Db,
  sessionId: string,
  redact: (data: Record<string, unknown>) => Record<string, unknown>,
): Promise<number> {
  const rows = await db.selectFrom('events').select(['id', 'data']).where('session_id', '=', sessionId).execute();
  let changed = 0;
  for (const row of rows) {
    const data = JSON.parse(row.data) as Record<string, unknown>;
    const redacted = redact(data);
    if (redacted === data) continue;
    await db
      .updateTable('events')
      .set({ data: JSON.stringify(redacted) })
      .where('id', '=', row.id)
      .execute();
    changed++;
  }
  return changed;
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
