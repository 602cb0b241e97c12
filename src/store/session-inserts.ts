import { sql, type Compilable } from 'kysely';
import type { KeyToConfirm } from '../domain/principal.ts';
import type { Session } from '../domain/session.ts';
import type { Db } from './db.ts';
import { capabilitiesOf } from './dialect.ts';
import { prepareQuery } from './prepared.ts';
import { insertSession, insertSessions, toRow } from './sessions.ts';

/** Most sessions one INSERT writes. */
const MAX_BATCH = 64;

interface Pending {
  session: Session;
  key?: KeyToConfirm;
  /** Whether the row was stored: false only when its key was refused. */
  resolve: (stored: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for new sessions. The first insert of a group starts at the end of the event
 * loop's turn (setImmediate, no timer), so the requests read in the same turn go together; those
 * that arrive while a group is being written (on PostgreSQL, a round trip and a commit) wait and go
 * in the next one. One multi-row INSERT and one commit per group: on SQLite, where a write takes
 * no round trip, a commit writes the changed pages of the table and its indexes to the WAL, about
 * as many for ten rows as for one. Each caller's promise settles only once its row is committed,
 * as with a single INSERT. If a group fails, each of its sessions is inserted alone, so one bad
 * row fails only its own caller.
 *
 * On PostgreSQL a session may name the key its request was admitted under without a read
 * ({@link checksKeys}, http/auth.ts `confirmsKey`): the group's statement stores it only while that
 * key exists and its application is active, and its caller learns whether it was stored.
 */
export class SessionInserts {
  readonly #db: Db;
  #queue: Pending[] = [];
  #running = false;
  /** Whether {@link insert} takes a key to check: on PostgreSQL, where the key's own read is a round trip. */
  readonly checksKeys: boolean;

  constructor(db: Db) {
    this.#db = db;
    this.checksKeys = capabilitiesOf(db).statementRoundTrips;
  }

  /**
   * Stores `session` in the next group; resolves once it is committed, true, or, when `key` was
   * refused, false and nothing stored.
   */
  insert(session: Session, key?: KeyToConfirm): Promise<boolean> {
    if (key && !this.checksKeys) return Promise.reject(new Error('a key is checked by the insert on PostgreSQL only'));
    return new Promise<boolean>((resolve, reject) => {
      this.#queue.push({ session, key, resolve, reject });
      if (this.#running) return;
      // The first insert waits for the end of this turn of the event loop: every request whose
      // body was read in the same turn (under load, several) joins it in one statement and one
      // commit. No timer: the wait is the rest of the turn, a few microseconds.
      this.#running = true;
      setImmediate(() => void this.#drain());
    });
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_BATCH);
        if (batch.length === 1) await this.#alone(batch[0]);
        else await this.#together(batch);
      }
    } finally {
      this.#running = false;
    }
  }

  async #alone(pending: Pending): Promise<void> {
    try {
      if (this.checksKeys) await this.#write([pending]);
      else {
        await insertSession(this.#db, pending.session);
        pending.resolve(true);
      }
    } catch (err) {
      pending.reject(err);
    }
  }

  async #together(batch: Pending[]): Promise<void> {
    try {
      if (this.checksKeys) return await this.#write(batch);
      await insertSessions(
        this.#db,
        batch.map((p) => p.session),
      );
    } catch {
      for (const pending of batch) await this.#alone(pending);
      return;
    }
    for (const pending of batch) pending.resolve(true);
  }

  /** PostgreSQL: the batch in one statement that checks the keys named; each caller learns its own outcome. */
  async #write(batch: Pending[]): Promise<void> {
    const stored = await insertSessionsCheckingKeys(this.#db, batch);
    for (const pending of batch) pending.resolve(stored.has(pending.session.id));
  }
}

/** The columns of a new session that vary, in the order {@link insertSessionsCheckingKeys} sends them. */
const NEW_SESSION_COLUMNS = [
  'id',
  'app_id',
  'org_id',
  'environment',
  'status',
  'challenge_nonce',
  'purpose',
  'required_claims',
  'metadata',
  'client_reference',
  'expires_at',
  'created_at',
  'updated_at',
  'return_url',
] as const;

/** What {@link insertSessionsCheckingKeys} sends, one array per column: the session's, then the key to check. */
const CHECKED_INSERT_COLUMNS = [...NEW_SESSION_COLUMNS, 'key_id', 'key_hash'] as const;

/** Each column's values as one PostgreSQL `text[]` literal ({@link textArrayLiteral}). */
type NewSessionArrays = Record<(typeof CHECKED_INSERT_COLUMNS)[number], string>;

/**
 * New sessions, each stored only if the key it names (if any) still exists with that hash and its
 * application is active, in one statement whatever their number: one array per column, unnested,
 * so the text is the same for every group and runs as one prepared statement. PostgreSQL only.
 * The check is a scalar subquery, run per row through the keys' primary key: as an EXISTS beside
 * the OR it became a hashed subplan of every active key, and as a join a hash join over all of
 * them (test/store/session-inserts.test.ts reads the plan).
 *
 * Each array is read through a scalar subquery, `(select $n::text[])`, so that no plan knows how
 * many rows the group holds: a plan made for the values bound counted the elements of the array
 * constants, and a group of fewer than ten rows (the generic plan's guess) always looked cheaper
 * planned afresh, so PostgreSQL planned the statement again on every run, a quarter of its CPU per
 * session created. With the count unknown to both, the generic plan costs what a fresh one does
 * without the planning, and is kept after the first five runs.
 */
const insertCheckingKeys = prepareQuery(
  'insert_sessions_checking_keys',
  (db, p: NewSessionArrays): Compilable<{ id: string }> => {
    const unnested = sql.join(CHECKED_INSERT_COLUMNS.map((column) => sql`(select ${p[column]}::text[])`));
    const named = sql.join(CHECKED_INSERT_COLUMNS.map((column) => sql.ref(column)));
    return {
      compile: () =>
        sql<{ id: string }>`insert into sessions (${sql.join(NEW_SESSION_COLUMNS.map((c) => sql.ref(c)))},
        failed_attempts, verified, result, consented_at, completed_at, redacted_at)
      select ${sql.join(NEW_SESSION_COLUMNS.map((c) => sql.ref(`v.${c}`)))}, 0, null, null, null, null, null
      from unnest(${unnested}) as v(${named})
      where v.key_id is null or 'active' = (
        select a.status from api_keys as k join applications as a on a.id = k.app_id
        where k.id = v.key_id and k.key_hash = v.key_hash)
      returning id`.compile(db),
    };
  },
);

/**
 * New sessions in one statement (store/session-inserts.ts groups them), each one with a `key` only
 * if that key still exists and its application is active as the statement runs: the check of
 * authentication, made in the write itself (http/auth.ts, `confirmsKey`). Returns the ids stored;
 * a session whose key was refused is not. All or none otherwise (a duplicate id fails them all).
 * PostgreSQL only: on SQLite a key read takes no round trip and is made before, as for any route.
 */
export async function insertSessionsCheckingKeys(
  db: Db,
  sessions: Array<{ session: Session; key?: KeyToConfirm }>,
): Promise<Set<string>> {
  if (!capabilitiesOf(db).statementRoundTrips)
    throw new Error('sessions are inserted checking keys on PostgreSQL only');
  const values = Object.fromEntries(
    CHECKED_INSERT_COLUMNS.map((column) => [column, [] as Array<string | null>]),
  ) as Record<(typeof CHECKED_INSERT_COLUMNS)[number], Array<string | null>>;
  for (const { session, key } of sessions) {
    if (session.status !== 'pending' || session.result !== null || session.redactedAt !== null)
      throw new Error('only a new session is inserted checking its key');
    const row = toRow(session);
    for (const column of NEW_SESSION_COLUMNS) values[column].push((row[column] ?? null) as string | null);
    values.key_id.push(key?.keyId ?? null);
    values.key_hash.push(key?.keyHash ?? null);
  }
  const arrays = Object.fromEntries(
    CHECKED_INSERT_COLUMNS.map((column) => [column, textArrayLiteral(values[column])]),
  ) as NewSessionArrays;
  const { rows } = await insertCheckingKeys.execute(db, arrays);
  return new Set(rows.map((row) => row.id));
}

/** Where an element needs escaping in an array literal: a double quote or a backslash. */
const NEEDS_ESCAPE = /["\\]/;

/**
 * The PostgreSQL array literal of text values and nulls: the string pg makes of a JavaScript array
 * parameter (`prepareValue`), every value quoted, `"` and `\` escaped with a backslash, null as
 * NULL. Made here because pg escapes each value with two regular-expression replaces, about half
 * of what a create's sixteen one-element arrays cost to send; a value with nothing to escape is
 * written as it is after one test.
 */
export function textArrayLiteral(values: ReadonlyArray<string | null>): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) literal += ',';
    if (value === null) literal += 'NULL';
    else if (!NEEDS_ESCAPE.test(value)) literal += `"${value}"`;
    else literal += `"${value.replace(/[\\"]/g, '\\$&')}"`;
  }
  return `${literal}}`;
}
