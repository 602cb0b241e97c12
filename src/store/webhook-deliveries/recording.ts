import { sql, type Insertable, type QueryCreator } from 'kysely';
import { canDeliveryTransition, REQUEUEABLE, type AttemptOutcome } from '../../domain/delivery-state.ts';
import type { EventType } from '../../domain/events.ts';
import type { Db } from '../db.ts';
import { capabilitiesOf } from '../dialect.ts';
import { prepareQuery } from '../prepared.ts';
import type { Database, WebhookAttemptsTable } from '../schema.ts';
import type { DeliveryAttempt } from './read-model.ts';

/**
 * What moves a delivery between claims: its insertion (the outbox, due at once), the record of
 * each finished attempt under the claim that made it (to pending for a retry, succeeded or
 * failed), and a manual retry (requeueDelivery). The claim itself is claim.ts.
 */

export interface NewDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
}

/** The INSERT of new deliveries, due now, for the caller to run or to put in a larger statement. */
export function insertDeliveriesQuery(q: QueryCreator<Database>, deliveries: NewDelivery[], now: string) {
  return q.insertInto('webhook_deliveries').values(
    deliveries.map((d) => ({
      id: d.id,
      endpoint_id: d.endpointId,
      event_id: d.eventId,
      event_type: d.eventType,
      status: 'pending' as const,
      due_at: now,
      lease_token: null,
      attempt_count: 0,
      created_at: now,
      updated_at: now,
      delivered_at: null,
    })),
  );
}

export async function insertDeliveries(db: Db, deliveries: NewDelivery[], now: string): Promise<void> {
  if (deliveries.length === 0) return;
  await insertDeliveriesQuery(db, deliveries, now).execute();
}

export interface AttemptRecord {
  id: string;
  workerId: string;
  attempt: DeliveryAttempt;
  /** What the delivery becomes. */
  next: AttemptOutcome;
  /** A 410: the endpoint is disabled in the same transaction. */
  disableEndpoint?: { endpointId: string };
}

/** One finished attempt to record, under the claim that made it. */
export interface PendingRecord {
  deliveryId: string;
  /** The claim's lease token: only its holder may record. */
  token: string;
  record: AttemptRecord;
}

/**
 * Records an attempt and moves its delivery on, if the claim `token` still holds the lease.
 * @returns false when it does not (the lease ran out and another worker took over, or the
 *   endpoint was deleted): nothing is written.
 */
export async function recordAttempt(
  db: Db,
  deliveryId: string,
  token: string,
  record: AttemptRecord,
  now: string,
): Promise<boolean> {
  const recorded = await recordAttempts(db, [{ deliveryId, token, record }], now);
  return recorded.has(deliveryId);
}

function attemptRow({ deliveryId, record }: PendingRecord): Insertable<WebhookAttemptsTable> {
  const a = record.attempt;
  return {
    id: record.id,
    delivery_id: deliveryId,
    attempt: a.attempt,
    worker_id: record.workerId,
    started_at: a.startedAt,
    duration_ms: a.durationMs,
    status_code: a.statusCode,
    outcome: a.outcome,
    error_message: a.errorMessage,
    response_body: a.responseBody,
    response_body_truncated: a.responseBodyTruncated ? 1 : 0,
  };
}

/** What a batch recorded in one statement takes: its moves and its attempts, each one JSON parameter. */
export type RecordingValues = {
  moves: string;
  attempts: string;
  now: string;
};

export function recordingValuesOf(records: readonly PendingRecord[], now: string): RecordingValues {
  const moves = JSON.stringify(
    records.map(({ deliveryId, token, record }) => ({
      id: deliveryId,
      token,
      status: record.next.status,
      due_at: record.next.status === 'pending' ? record.next.dueAt : null,
      gone: record.disableEndpoint?.endpointId ?? null,
    })),
  );
  return { moves, attempts: JSON.stringify(records.map(attemptRow)), now };
}

/**
 * The WITH that records a batch in one statement (PostgreSQL), for a query to follow: `input`,
 * the moves as rows; `moved`, one UPDATE … FROM that moves only the deliveries still held by their
 * claim; `disabled`, the endpoints of the 410s among those; `logged`, the INSERT of exactly those
 * deliveries' attempts (typed by the table's row type), returning their ids. PostgreSQL runs every
 * part whether or not it is read. `moved` also names its ids as an array: joined to the JSON list
 * alone (which the planner takes for 100 rows), the UPDATE scanned a small table whole (10,000
 * deliveries never analyzed, read for 16: test/store/webhooks-claim.test.ts); by the array it
 * reads the primary key.
 */
export function withRecording(db: Db, p: RecordingValues) {
  // Each part in parentheses: Kysely writes a raw part as it is.
  return db
    .with(
      'input',
      () => sql<{ id: string; token: string; status: string; due_at: string | null; gone: string | null }>`(
        select * from json_to_recordset(${p.moves}::json) as x(id text, token text, status text, due_at text, gone text))`,
    )
    .with(
      'moved',
      () => sql<{ id: string }>`(
        update webhook_deliveries as d set status = x.status, due_at = x.due_at, lease_token = null, updated_at = ${p.now},
          delivered_at = case when x.status = 'succeeded' then ${p.now} else d.delivered_at end
        from input as x where d.id = x.id and d.id = any(array(select i.id from input as i))
          and d.status = 'sending' and d.lease_token = x.token
        returning d.id)`,
    )
    .with(
      'disabled',
      () => sql<Record<string, never>>`(
        update webhook_endpoints set enabled = 0, disabled_reason = 'endpoint_gone', updated_at = ${p.now}
        where id in (select x.gone from input as x join moved as m on m.id = x.id where x.gone is not null))`,
    )
    .with(
      'logged',
      () => sql<{ delivery_id: string }>`(
        insert into webhook_attempts (${sql.join(ATTEMPT_COLUMNS.map((c) => sql.ref(c)))})
        select ${sql.join(ATTEMPT_COLUMNS.map((c) => sql.ref(`a.${c}`)))}
        from json_populate_recordset(null::webhook_attempts, ${p.attempts}::json) as a
        where a.delivery_id in (select id from moved)
        returning delivery_id)`,
    );
}

/**
 * A batch on PostgreSQL as one statement, whatever its attempts' outcomes ({@link withRecording}):
 * one round trip and no BEGIN/COMMIT, where the transaction takes four and one more per retry (a
 * retry has a due date of its own). A statement is atomic as a transaction is.
 */
async function recordInOneStatement(db: Db, records: PendingRecord[], now: string): Promise<Set<string>> {
  const { rows } = await recordStatement.execute(db, recordingValuesOf(records, now));
  return new Set(rows.map((row) => row.delivery_id));
}

/**
 * {@link recordInOneStatement}'s statement: its text is the same for every batch (the moves and
 * attempts are two JSON values), so it runs as a named prepared statement. Parsed and planned on
 * every call it cost the server 0.8 ms of its 1.6 ms a recording, where a burst's worker records
 * a delivery or two at a time (bench/webhooks.ts).
 */
const recordStatement = prepareQuery('record_deliveries', (db: Db, p: RecordingValues) =>
  withRecording(db, p).selectFrom('logged').select('delivery_id'),
);

/** Throws unless every record moves its delivery as a finished attempt may. */
export function checkRecordedMoves(records: readonly PendingRecord[]): void {
  for (const { record } of records) {
    if (!canDeliveryTransition('sending', record.next.status))
      throw new Error(`a delivery cannot move from sending to ${record.next.status}`);
  }
}

/**
 * A batch's moves on SQLite, one UPDATE … FROM over the moves' JSON, returning the ids it moved:
 * its text is the same for every batch, so it is compiled once and SQLite's prepared statement is
 * reused (built per batch, with a list of ids per outcome and one UPDATE per retry, the query
 * builder cost a drain more than SQLite's own work on these statements).
 */
const moveStatement = prepareQuery('record_moves', (db: Db, p: RecordingValues) =>
  db
    .updateTable('webhook_deliveries')
    .from(
      sql<{ id: string; token: string; status: string; due_at: string | null }>`(select value ->> 'id' as id,
        value ->> 'token' as token, value ->> 'status' as status, value ->> 'due_at' as due_at
        from json_each(${p.moves}))`.as('x'),
    )
    .set({
      status: sql`x.status`,
      due_at: sql`x.due_at`,
      lease_token: null,
      updated_at: p.now,
      delivered_at: sql`case when x.status = 'succeeded' then ${p.now} else webhook_deliveries.delivered_at end`,
    })
    .where(
      sql<boolean>`webhook_deliveries.id = x.id and webhook_deliveries.status = 'sending' and webhook_deliveries.lease_token = x.token`,
    )
    .returning('webhook_deliveries.id'),
);

/** The attempts of the deliveries a batch moved (`recorded`, a JSON array of ids), on SQLite: one INSERT … SELECT. */
const logStatement = prepareQuery('record_attempts', (db: Db, p: { attempts: string; recorded: string }) =>
  db
    .insertInto('webhook_attempts')
    .columns(ATTEMPT_COLUMNS)
    .expression(
      sql`select ${sql.join(ATTEMPT_COLUMNS.map((c) => sql`value ->> ${sql.lit(c)}`))} from json_each(${p.attempts})
        where value ->> 'delivery_id' in (select value from json_each(${p.recorded}))`,
    ),
);

const ATTEMPT_COLUMNS = [
  'id',
  'delivery_id',
  'attempt',
  'worker_id',
  'started_at',
  'duration_ms',
  'status_code',
  'outcome',
  'error_message',
  'response_body',
  'response_body_truncated',
] as const satisfies ReadonlyArray<keyof WebhookAttemptsTable>;

/**
 * Records many attempts in one transaction (the worker's batch), each only if its claim still
 * holds the lease: the deliveries move on, their attempts are logged, a 410 disables its endpoint.
 * On PostgreSQL that is one statement ({@link recordInOneStatement}); on SQLite one transaction of
 * two statements whatever the batch ({@link moveStatement}, {@link logStatement}), and one more
 * when a 410 disables endpoints.
 * @returns the ids of the deliveries recorded; the others were not ours any more and nothing of
 *   theirs is written.
 */
export async function recordAttempts(db: Db, records: PendingRecord[], now: string): Promise<Set<string>> {
  checkRecordedMoves(records);
  if (records.length === 0) return new Set();
  if (capabilitiesOf(db).writableCtes) return recordInOneStatement(db, records, now);
  const values = recordingValuesOf(records, now);
  return db.transaction().execute(async (trx) => {
    const { rows } = await moveStatement.execute(trx, values);
    const recorded = new Set(rows.map((row) => row.id));
    if (recorded.size === 0) return recorded;
    await logStatement.execute(trx, { attempts: values.attempts, recorded: JSON.stringify([...recorded]) });
    const gone = [
      ...new Set(
        records.flatMap((r) =>
          r.record.disableEndpoint && recorded.has(r.deliveryId) ? [r.record.disableEndpoint.endpointId] : [],
        ),
      ),
    ];
    if (gone.length > 0) {
      await trx
        .updateTable('webhook_endpoints')
        .set({ enabled: 0, disabled_reason: 'endpoint_gone', updated_at: now })
        .where('id', 'in', gone)
        .execute();
    }
    return recorded;
  });
}

/**
 * Makes a delivery due now (a manual retry), whatever its state except `sending`.
 * @returns false when it is being sent at this moment (or does not exist).
 */
export async function requeueDelivery(db: Db, id: string, now: string): Promise<boolean> {
  const updated = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', due_at: now, lease_token: null, updated_at: now })
    .where('id', '=', id)
    .where('status', 'in', REQUEUEABLE)
    .executeTakeFirst();
  return Number(updated.numUpdatedRows) > 0;
}
