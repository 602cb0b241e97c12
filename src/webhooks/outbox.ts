import { sql, type Compilable, type Insertable, type RawBuilder } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import type { EventEnvelope } from '../domain/events.ts';
import { newId } from '../domain/ids.ts';
import type { Db } from '../store/db.ts';
import { capabilitiesOf } from '../store/dialect.ts';
import { prepareQuery } from '../store/prepared.ts';
import type { EventsTable } from '../store/schema.ts';
import { transitionUpdateSql, type TransitionValues } from '../store/session-transitions.ts';
import { eventRow, insertEvent } from '../store/events.ts';
import { insertDeliveries, insertDeliveriesQuery, type NewDelivery } from '../store/webhook-deliveries/recording.ts';
import { subscribedEndpoints } from '../store/webhooks.ts';

/**
 * The transactional outbox (ARCHITECTURE.md, Flow 1): deliveries are written in the transaction of the state
 * change that caused their event, so that both commit or neither does; a worker sends them later.
 */

/**
 * The PostgreSQL channel that wakes delivery workers in every process when deliveries commit: one
 * per schema, so installations (or test runs) sharing a database in separate schemas do not wake
 * each other. The server computes it from the connection's current schema, the same way on both
 * sides; it stays within PostgreSQL's 63-character limit on channel names.
 */
export const DELIVERY_CHANNEL_EXPRESSION = "left('matricula_webhooks:' || current_schema(), 63)";

/** The enabled endpoints of the event's application subscribed to its type. */
export async function subscribers(trx: Db, event: EventEnvelope): Promise<string[]> {
  return (await subscribedEndpoints(trx, event.appId, event.event)).map((e) => e.id);
}

/**
 * Writes `event` and one delivery of it to each of `endpointIds` (its subscribers, or the one
 * endpoint a test event is for), in the caller's transaction, and queues the wake-up that names
 * those endpoints: PostgreSQL sends it at commit. Where a WITH may hold INSERTs (PostgreSQL) that
 * is one statement, one round trip where it was three.
 */
export async function writeEvent(
  trx: Db,
  event: EventEnvelope,
  orgId: string,
  endpointIds: string[],
  options: { clock: Clock; origin?: string },
): Promise<NewDelivery[]> {
  const deliveries = endpointIds.map((endpointId) => ({
    id: newId('delivery', options.clock),
    endpointId,
    eventId: event.id,
    eventType: event.event,
  }));
  const now = options.clock.now().toISOString();
  const { listenNotify, writableCtes } = capabilitiesOf(trx);
  if (deliveries.length === 0) {
    await insertEvent(trx, event, orgId);
  } else if (writableCtes && listenNotify) {
    const endpoints = new Set(endpointIds);
    // The event's INSERT returns its one row through pg_notify: the NOTIFY is queued once. The
    // deliveries' foreign key to it is checked at the end of the statement, once both are in.
    await trx
      .with('new_deliveries', (q) => insertDeliveriesQuery(q, deliveries, now))
      .insertInto('events')
      .values(eventRow(event, orgId))
      .returning(notifyExpression(endpoints, options.origin).as('notified'))
      .execute();
  } else {
    await insertEvent(trx, event, orgId);
    await insertDeliveries(trx, deliveries, now);
    await notifyWorkers(trx, new Set(endpointIds), options.origin);
  }
  return deliveries;
}

/** Most endpoint ids a wake-up names (PostgreSQL caps a payload at 8000 bytes); beyond, it names none. */
const MAX_WAKE_ENDPOINTS = 100;

/** The id alphabet of domain/ids.ts, for ids made in SQL from one made here. */
const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** `n` (an integer expression, 0 ≤ n < 32^4) as four id characters, most significant first. */
function idDigits(n: string): string {
  return [15, 10, 5, 0]
    .map((shift) => `substr('${ID_ALPHABET}', cast(((${n}) >> ${shift}) & 31 as integer) + 1, 1)`)
    .join(' || ');
}

/**
 * Writes `event` and one delivery of it to each enabled endpoint of its application subscribed to
 * its type, and queues the wake-up naming those endpoints. On PostgreSQL that is one statement:
 * the subscribers are read inside it rather than by a SELECT of their own first, one round trip
 * per event where it was two. The deliveries' ids are made in SQL from one id made here (its
 * type, time and first 12 random characters) and the subscriber's number in four characters: as
 * unique as ids made one by one (60 random bits per event), in time order with the others, for up
 * to a million subscribers. Elsewhere the subscribers are read first ({@link subscribers}).
 */
export async function writeEventToSubscribers(
  trx: Db,
  event: EventEnvelope,
  orgId: string,
  options: { clock: Clock; origin?: string },
): Promise<NewDelivery[]> {
  if (!outboxIsOneStatement(trx)) return writeEvent(trx, event, orgId, await subscribers(trx, event), options);
  const { rows } = await eventToSubscribers.execute(trx, outboxValuesOf(event, orgId, options));
  return rows.map((r) => ({ id: r.id, endpointId: r.endpoint_id, eventId: event.id, eventType: event.event }));
}

/** What the outbox's statement writes: the event's row, the deliveries' id prefix and time, the wake-up's origin. */
type OutboxValues = Required<Insertable<EventsTable>> & { base: string; now: string; payloadPrefix: string };

/**
 * The WITH parts that write an event, a delivery of it to each subscriber and the wake-up naming
 * those (PostgreSQL), each gated by `only` (a condition; `true` when not gated): `subscribed`, the
 * enabled endpoints of the application subscribed to the type; `new_deliveries`, their
 * deliveries; `new_event`; and `notified`, the NOTIFY, queued only when there are deliveries.
 */
function outboxParts(p: OutboxValues, only: RawBuilder<boolean>) {
  return sql`subscribed as (
      select id, row_number() over (order by id) - 1 as n from webhook_endpoints
      where app_id = ${p.app_id} and enabled = 1 and events::jsonb @> jsonb_build_array(${p.type}::text) and ${only}
    ), new_deliveries as (
      insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
        attempt_count, created_at, updated_at, delivered_at)
      select ${p.base} || ${sql.raw(idDigits('n'))}, id, ${p.id}, ${p.type}, 'pending', ${p.now}, null, 0,
        ${p.now}, ${p.now}, null from subscribed
      returning id, endpoint_id
    ), new_event as (
      insert into events (id, app_id, org_id, environment, type, data, created_at, session_id)
      select ${p.id}, ${p.app_id}, ${p.org_id}, ${p.environment}, ${p.type}, ${p.data}, ${p.created_at},
        ${p.session_id} where ${only}
    ), notified as (
      select pg_notify(${sql.raw(DELIVERY_CHANNEL_EXPRESSION)}, ${p.payloadPrefix} ||
        case when count(*) > ${sql.lit(MAX_WAKE_ENDPOINTS)} then '' else string_agg(endpoint_id, ',') end) as sent
      from new_deliveries having count(*) > 0
    )`;
}

/** The outbox's values for `event`, its deliveries' ids made from one made now. */
function outboxValuesOf(event: EventEnvelope, orgId: string, options: { clock: Clock; origin?: string }): OutboxValues {
  const row = eventRow(event, orgId);
  return {
    ...row,
    session_id: row.session_id ?? null,
    base: newId('delivery', options.clock).slice(0, -4),
    now: options.clock.now().toISOString(),
    payloadPrefix: `${options.origin ?? ''}/`,
  };
}

/**
 * The statement of {@link writeEventToSubscribers}: its text is the same for every event, so it
 * runs as a named prepared statement (store/prepared.ts), planned once per connection.
 */
const eventToSubscribers = prepareQuery(
  'write_event_to_subscribers',
  (db, p: OutboxValues): Compilable<{ id: string; endpoint_id: string; notified: number }> => ({
    compile: () =>
      sql<{ id: string; endpoint_id: string; notified: number }>`with ${outboxParts(p, sql<boolean>`true`)}
    select d.id, d.endpoint_id, (select count(*) from notified) as notified from new_deliveries as d`.compile(db),
  }),
);

/**
 * Moves a session as store/session-transitions.ts transitionSession does (the conditional UPDATE) and, only
 * if it moved, writes `event` about that move with its deliveries and wake-up, as
 * {@link writeEventToSubscribers} does: one statement (PostgreSQL), atomic as a transaction is and
 * committed alone. A use case that moves a session and records its event took four round trips
 * (BEGIN, the UPDATE, the event, COMMIT); it takes one. Returns the deliveries written, or
 * undefined when the session did not move (nothing is written then).
 */
export async function moveSessionRecording(
  db: Db,
  move: TransitionValues,
  event: EventEnvelope,
  orgId: string,
  options: { clock: Clock; origin?: string },
): Promise<NewDelivery[] | undefined> {
  const { rows } = await sessionMoveWithEvent.execute(db, { ...move, ...outboxValuesOf(event, orgId, options) });
  if (Number(rows[0]?.moved ?? 0) === 0) return undefined;
  return rows.flatMap((r) =>
    r.id === null || r.endpoint_id === null
      ? []
      : [{ id: r.id, endpointId: r.endpoint_id, eventId: event.id, eventType: event.event }],
  );
}

/**
 * Whether the outbox writes an event with its subscribers, deliveries and NOTIFY (and a session's
 * move with them) as one statement: PostgreSQL.
 */
export function outboxIsOneStatement(db: Db): boolean {
  const { listenNotify, writableCtes } = capabilitiesOf(db);
  return listenNotify && writableCtes;
}

/** A row of the statement below: a NOTIFY queued is read as a column, or PostgreSQL would skip it. */
interface MoveRow {
  moved: string | number;
  notified: string | number;
  id: string | null;
  endpoint_id: string | null;
}

/**
 * The statement of {@link moveSessionRecording}: the session's UPDATE first, the outbox's parts
 * gated on its one row. One row always (the count of sessions moved), with a delivery per row
 * beside it when there are any. A named prepared statement, as the outbox's own.
 */
const sessionMoveWithEvent = prepareQuery(
  'move_session_with_event',
  (db, p: TransitionValues & OutboxValues): Compilable<MoveRow> => ({
    compile: () =>
      sql<MoveRow>`with moved as (
      ${transitionUpdateSql(p)}
    ), ${outboxParts(p, sql<boolean>`exists (select 1 from moved)`)}
    select (select count(*) from moved) as moved, (select count(*) from notified) as notified, d.id, d.endpoint_id
    from (select) as one left join new_deliveries as d on true`.compile(db),
  }),
);

/** What a wake-up says: the endpoints of the new deliveries, and who sent it. */
export interface WakeMessage {
  /** The endpoint ids, or undefined: any endpoint may have deliveries due. */
  endpointIds?: ReadonlySet<string>;
  /**
   * The {@link DeliveryWakeups.origin} of the process that committed: its own workers were woken
   * in process already, and may ignore the echo.
   */
  origin?: string;
}

/**
 * The payload of a wake-up: `origin/ids`, the ids comma-separated, none when they are not known.
 * Neither an origin (base64url) nor an id holds a slash or a comma.
 */
export function wakePayload(endpointIds?: ReadonlySet<string>, origin = ''): string {
  const ids = !endpointIds || endpointIds.size > MAX_WAKE_ENDPOINTS ? '' : [...endpointIds].join(',');
  return `${origin}/${ids}`;
}

/** Reads a wake-up's payload; one without a slash (an older version's) is the ids alone. */
export function readWakePayload(payload: string | undefined): WakeMessage {
  if (!payload) return {};
  const slash = payload.indexOf('/');
  const origin = slash > 0 ? payload.slice(0, slash) : undefined;
  const ids = slash >= 0 ? payload.slice(slash + 1) : payload;
  return { ...(ids ? { endpointIds: new Set(ids.split(',')) } : {}), ...(origin ? { origin } : {}) };
}

/**
 * Queues a wake-up for the workers of every process, inside the transaction: PostgreSQL sends it
 * at commit and drops it at rollback, so workers elsewhere wake exactly when the rows they are told
 * about are visible. It names the endpoints of the new deliveries when they are known, so that a
 * worker with all of them at its cap need not look, and its `origin` (the committing process's
 * {@link DeliveryWakeups.origin}), so that the workers that process woke in process already need
 * not claim again on the echo. A no-op where LISTEN/NOTIFY does not exist.
 */
export async function notifyWorkers(trx: Db, endpointIds?: ReadonlySet<string>, origin?: string): Promise<void> {
  if (capabilitiesOf(trx).listenNotify) await sql`select ${notifyExpression(endpointIds, origin)}`.execute(trx);
}

function notifyExpression(endpointIds: ReadonlySet<string> | undefined, origin: string | undefined) {
  return sql<void>`pg_notify(${sql.raw(DELIVERY_CHANNEL_EXPRESSION)}, ${wakePayload(endpointIds, origin)})`;
}
