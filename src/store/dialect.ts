import type { Database as SqliteDatabase } from 'better-sqlite3';
import {
  CompiledQuery,
  PostgresAdapter,
  sql,
  SqliteDriver,
  type DatabaseConnection,
  type Kysely,
  type RawBuilder,
} from 'kysely';
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { postgresDuringBatches, sqliteDuringBatches } from './batch-checkpoints.ts';
import { checkpointerOf } from './sqlite-checkpointer.ts';
import { StatementCachingSqliteConnection } from './sqlite-connection.ts';

/**
 * Every difference between the SQL dialects lives here, as capability flags and small helpers;
 * the rest of the code asks for a capability, never for a dialect name.
 */
export interface DialectCapabilities {
  name: 'sqlite' | 'postgres';
  /** `SELECT … FOR UPDATE SKIP LOCKED` for claiming rows with concurrent workers. */
  skipLocked: boolean;
  /** LISTEN/NOTIFY to wake workers in other processes. */
  listenNotify: boolean;
  /** Queries can run as named prepared statements of the connection (PreparingPgClient). */
  namedStatements: boolean;
  /**
   * Each statement is a round trip to a server, not a call in process: reads made together are
   * worth sending as one statement (store/key-lookups.ts).
   */
  statementRoundTrips: boolean;
  /**
   * A WITH may hold an INSERT, UPDATE or DELETE … RETURNING whose rows the statement around it
   * reads (and joins): a write and the read after it in one round trip.
   */
  writableCtes: boolean;
  /** What it takes for erased values to leave the database's files (store/erasure.ts). */
  erasure: ErasureStrategy;
  /**
   * Brings the query planner's statistics up to date where a table's size has changed much since
   * they were taken (after migrating, and periodically: jobs/schedule.ts).
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema, as above
  refreshStatistics(db: Kysely<any>): Promise<void>;
  /**
   * Runs `work`, a run of background batches (services/batches.ts), with what keeps the requests
   * it interleaves with quick meanwhile.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema, as above
  duringBatches<T>(db: Kysely<any>, work: () => Promise<T>): Promise<T>;
}

/**
 * SQLite plans from the statistics of its last ANALYZE, if one ever ran (an operator's, or
 * `PRAGMA optimize`), and does not renew them: statistics taken when `spent_nonces` held 50 rows
 * made every purge batch scan the 200,000 rows it held later (24 ms per batch of 10 rows instead
 * of 0.1 ms; bench/scale.ts's purge burst). `PRAGMA optimize=0x10002` re-analyzes, with a bounded
 * sample, the tables whose row count changed tenfold since (SQLite's advice for long-lived
 * connections: at open, then periodically); with nothing stale it only compares counts.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema, as above
async function sqliteRefreshStatistics(db: Kysely<any>): Promise<void> {
  await sql`pragma optimize = 0x10002`.execute(db);
}

/** PostgreSQL's autovacuum analyzes a table again as it changes (autovacuum_analyze_scale_factor). */
async function postgresRefreshStatistics(): Promise<void> {}

/**
 * After a redaction has overwritten values, older copies of them can remain where no query reads
 * them: old page images in a write-ahead log, old row versions, free space. Each dialect does what
 * it can about them, called by store/erasure.ts.
 */
export interface ErasureStrategy {
  /** After each batch of redactions has committed; cheap enough to run after every one. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema, as above
  afterBatch(db: Kysely<any>): Promise<void>;
  /** After a retention run that rewrote `tables` (plain table names of the store's schema). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema, as above
  afterSweep(db: Kysely<any>, tables: readonly string[]): Promise<void>;
}

/** How long a SQLite checkpoint waits for another process's readers (the connection is blocked meanwhile). */
const CHECKPOINT_BUSY_MS = 250;

/**
 * SQLite: the connection runs with `secure_delete` on (store/db.ts), so a row's old content is
 * zeroed in the database file as it is rewritten; but the WAL still holds every earlier image of
 * the page. A TRUNCATE checkpoint copies the newest pages into the file and empties the WAL (a
 * RESTART or PASSIVE one leaves the old frames in place until they are overwritten). It must wait
 * for readers of an older snapshot (another process: the CLI, a backup), and better-sqlite3 waits
 * on the event loop's thread; so it waits CHECKPOINT_BUSY_MS, not the connection's busy_timeout,
 * and if they outlast that the WAL is left as it is and the next batch's checkpoint empties it.
 */
const SQLITE_ERASURE: ErasureStrategy = {
  afterBatch: (db) => {
    const truncate = () =>
      db.connection().execute(async (connection) => {
        const [setting] = (await sql<{ timeout: number }>`pragma busy_timeout`.execute(connection)).rows;
        await sql`pragma busy_timeout = ${sql.lit(CHECKPOINT_BUSY_MS)}`.execute(connection);
        try {
          await sql`pragma wal_checkpoint(TRUNCATE)`.execute(connection);
        } finally {
          await sql`pragma busy_timeout = ${sql.lit(Number(setting?.timeout ?? 0))}`.execute(connection);
        }
      });
    // The checkpoint thread's own checkpoint holds the lock a TRUNCATE needs, which it would not
    // wait for (SQLite answers busy at once): none may run or start meanwhile.
    const checkpointer = checkpointerOf(db);
    return checkpointer ? checkpointer.hold(truncate) : truncate();
  },
  afterSweep: async () => {},
};

/**
 * PostgreSQL: an UPDATE leaves the old row version behind as a dead tuple until VACUUM removes
 * it; nothing can empty the WAL on demand. A plain VACUUM (not FULL: no exclusive lock, no table
 * rewrite) of the tables a retention run rewrote frees those versions' space for reuse. It cannot
 * run inside a transaction: `db` must be the pool, not a transaction. (PostgreSQL 13 or later.)
 */
const POSTGRES_ERASURE: ErasureStrategy = {
  afterBatch: async () => {},
  afterSweep: async (db, tables) => {
    if (tables.length === 0) return;
    if (tables.some((table) => !/^[a-z_]+$/.test(table))) throw new Error('afterSweep: plain table names only');
    // Without parallel workers: with a few dead rows VACUUM skips the index pass and only reads
    // each index's metapage, and starting two workers per table for that took 65–80 ms of a 2 ms
    // VACUUM of four tables at 1M sessions (bench/scale.ts, result retention).
    await sql`vacuum (parallel 0) ${sql.join(tables.map((table) => sql.table(table)))}`.execute(db);
  },
};

export const SQLITE: DialectCapabilities = {
  name: 'sqlite',
  skipLocked: false,
  listenNotify: false,
  namedStatements: false,
  statementRoundTrips: false,
  writableCtes: false,
  erasure: SQLITE_ERASURE,
  refreshStatistics: sqliteRefreshStatistics,
  duringBatches: sqliteDuringBatches,
};
export const POSTGRES: DialectCapabilities = {
  name: 'postgres',
  skipLocked: true,
  listenNotify: true,
  namedStatements: true,
  statementRoundTrips: true,
  writableCtes: true,
  erasure: POSTGRES_ERASURE,
  refreshStatistics: postgresRefreshStatistics,
  duringBatches: postgresDuringBatches,
};

/** Capabilities of an open Kysely instance (migrations receive only the instance). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema: migrations see an untyped instance
export function capabilitiesOf(db: Kysely<any>): DialectCapabilities {
  return db.getExecutor().adapter instanceof PostgresAdapter ? POSTGRES : SQLITE;
}

/**
 * Text type for ids and other keys that are ordered: PostgreSQL compares with the database's
 * locale unless told otherwise, so ids use the byte order ("C") there, as SQLite does by default.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema, as above
export function keyTextType(db: Kysely<any>): 'text' | RawBuilder<unknown> {
  return capabilitiesOf(db).name === 'postgres' ? sql`text collate "C"` : 'text';
}

/**
 * The text of a top-level field of a JSON text column (null when absent or not a string): SQLite's
 * json_extract, PostgreSQL's ->> on the text cast to json.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema, as above
export function jsonTextField(db: Kysely<any>, column: string, field: string): RawBuilder<string | null> {
  if (!/^[a-z_]+$/.test(column) || !/^[A-Za-z_]+$/.test(field)) throw new Error('jsonTextField: plain names only');
  return capabilitiesOf(db).name === 'postgres'
    ? sql<
        string | null
      >`case when json_typeof(${sql.ref(column)}::json -> ${sql.lit(field)}) = 'string' then ${sql.ref(column)}::json ->> ${sql.lit(field)} end`
    : sql<
        string | null
      >`case when json_type(${sql.ref(column)}, ${sql.lit(`$.${field}`)}) = 'text' then json_extract(${sql.ref(column)}, ${sql.lit(`$.${field}`)}) end`;
}

/**
 * better-sqlite3 driver whose transactions start with BEGIN IMMEDIATE: a write transaction takes
 * the write lock up front and waits on busy_timeout, instead of failing with SQLITE_BUSY when
 * another process (the CLI beside the server) wrote in between. Its one connection keeps its
 * prepared statements (sqlite-connection.ts); Kysely's mutex still hands it to one
 * query or transaction at a time.
 */
export class ImmediateSqliteDriver extends SqliteDriver {
  readonly #connection: StatementCachingSqliteConnection;
  readonly #database: SqliteDatabase;
  /** A query or transaction holds the connection (from acquire to release). */
  #held = false;

  /** `onCommit`: told after each write that committed (store/sqlite-checkpointer.ts counts them). */
  constructor(config: { database: SqliteDatabase; onCommit?: () => void }) {
    super(config);
    this.#database = config.database;
    this.#connection = new StatementCachingSqliteConnection(config.database, config.onCommit ?? (() => undefined));
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    // SQLite has one connection: a query through the root instance from inside a transaction on
    // it would wait for that transaction, which waits for the query. Say so instead of hanging.
    const scope = transactionScope.getStore();
    if (this.#held && scope?.open && directReaders.get(scope.db) === this)
      throw new Error(
        'A query through the root database inside a unit of work would wait forever for the ' +
          "connection the unit of work holds: use the unit of work's own db (work.db).",
      );
    await super.acquireConnection();
    this.#held = true;
    return this.#connection;
  }

  override async releaseConnection(): Promise<void> {
    this.#held = false;
    await super.releaseConnection();
  }

  /**
   * Runs a read at once, bypassing Kysely's executor and its turn on the connection, when nothing
   * holds the connection: better-sqlite3 is synchronous, so no statement is under way, and no
   * transaction is open on it (a transaction holds the connection from BEGIN to COMMIT, and a
   * read on the same connection inside it would see its uncommitted writes). Undefined when the
   * connection is held, or for a statement that is not a read: the caller goes through Kysely.
   */
  readIfIdle(text: string, parameters: readonly unknown[]): unknown[] | undefined {
    return this.#held ? undefined : this.#connection.read(text, parameters);
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  /**
   * SQLite rolls a transaction back by itself on some errors (SQLITE_FULL, SQLITE_IOERR, a busy
   * deadlock): a ROLLBACK then fails with "cannot rollback - no transaction is active", and that
   * error would replace the real cause in the request's log and answer. Roll back only what is open.
   */
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#database.inTransaction) await super.rollbackTransaction(connection);
  }
}

/** The root database whose transaction the code in this async context runs inside. */
const transactionScope = new AsyncLocalStorage<{ db: object; open: boolean }>();

/**
 * Runs `body` marked as inside a transaction of the root instance `db`: on SQLite, a query through
 * `db` itself (instead of the transaction) then fails at once rather than deadlocking.
 */
export async function insideTransactionOf<T>(db: object, body: () => Promise<T>): Promise<T> {
  // Closed when the body is done: a callback it left behind (a timer, a promise not awaited) runs
  // in this context later, when another request may hold the connection, and must wait as usual.
  const scope = { db, open: true };
  try {
    return await transactionScope.run(scope, body);
  } finally {
    scope.open = false;
  }
}

/** Root SQLite instances (no plugins, not a transaction) and their driver: see {@link readDirectly}. */
const directReaders = new WeakMap<object, ImmediateSqliteDriver>();

/** Lets {@link readDirectly} read through `db`'s connection: `db` is the store's root instance. */
export function allowDirectReads(db: object, driver: ImmediateSqliteDriver): void {
  directReaders.set(db, driver);
}

/**
 * A hot-path read (store/prepared.ts) on SQLite's root instance while its connection is free:
 * the rows at once, without Kysely's executor, its connection mutex and their promises (a third
 * of such a read's time). Undefined otherwise (PostgreSQL, a transaction, an instance with
 * plugins, a connection in use): run the query through Kysely.
 */
export function readDirectly(db: object, text: string, parameters: readonly unknown[]): unknown[] | undefined {
  return directReaders.get(db)?.readIfIdle(text, parameters);
}

/**
 * SQL texts run as named prepared statements on PostgreSQL, with their names: only the hot-path
 * queries of store/prepared.ts, each compiled once from code, so the set is small and fixed.
 */
const namedStatements = new Map<string, string>();

/** Registers `text` to run as the prepared statement `name` on every PostgreSQL connection. */
export function nameStatement(text: string, name: string): void {
  namedStatements.set(text, name);
}

/** Pool settings of a {@link PreparingPgClient}: pg's, and the deadline of a query. */
export interface PreparingPgConfig extends pg.PoolConfig {
  /** A query unanswered after this many ms closes its connection (0: no deadline). */
  queryDeadlineMs?: number;
}

/**
 * A pg client that runs the registered statements by name: the server parses and plans each once
 * per connection instead of on every call. Everything else passes through unchanged.
 *
 * With `queryDeadlineMs`, a query that has no answer by then destroys the connection's socket: the
 * query (and any queued behind it) fails with a connection error, the pool drops the client, and
 * the request answers 503 instead of hanging on a server that went silent. pg's own
 * `query_timeout` is not used because it leaves the connection busy with the unanswered query,
 * and the pool would hand it to the next request.
 */
export class PreparingPgClient extends pg.Client {
  constructor(config?: string | PreparingPgConfig) {
    super(config);
    const deadlineMs = typeof config === 'object' ? (config.queryDeadlineMs ?? 0) : 0;
    // An own property in front of the prototype's method: `query` has too many overloads to override.
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    this.query = ((...args: unknown[]) => {
      const [text, values] = args;
      const name = typeof text === 'string' && args.length === 2 ? namedStatements.get(text) : undefined;
      const result = name ? query({ name, text, values }) : query(...args);
      if (deadlineMs > 0 && result instanceof Promise) this.#guard(result, deadlineMs);
      return result;
    }) as pg.Client['query'];
  }

  #guard(result: Promise<unknown>, deadlineMs: number): void {
    const timer = setTimeout(() => {
      // pg keeps its socket as `connection.stream`; not in its types.
      const stream = (this as unknown as { connection?: { stream?: { destroy(err?: Error): void } } }).connection
        ?.stream;
      stream?.destroy(new Error(`the database query took longer than ${deadlineMs} ms; connection closed`));
    }, deadlineMs);
    timer.unref();
    result.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
  }
}
