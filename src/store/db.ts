import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  sql,
  PostgresDialect,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type MigrationProvider,
} from 'kysely';
import pg from 'pg';
import {
  allowDirectReads,
  capabilitiesOf,
  ImmediateSqliteDriver,
  POSTGRES,
  PreparingPgClient,
  SQLITE,
  type PreparingPgConfig,
  type DialectCapabilities,
} from './dialect.ts';
import { watchDiskOf } from './health-probe.ts';
import { checkpointInThread, SqliteCheckpointer, WAL_CHECKPOINT_PAGES } from './sqlite-checkpointer.ts';
import { MIGRATIONS } from './migrations/index.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

/** An open database: the query builder, what its dialect can do, and how to close it. */
export interface Store {
  db: Db;
  capabilities: DialectCapabilities;
  /** PostgreSQL only: the pool, for LISTEN connections. */
  pgPool?: pg.Pool;
  /** PostgreSQL schema the store works in, when not the default. */
  schema?: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL: schema to use (created if missing); tests isolate each file in its own. */
  schema?: string;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * PostgreSQL: how long a request waits to connect, or for a free connection of the pool, before
   * it fails (and the API answers 503). Default 5 s.
   */
  connectTimeoutMs?: number;
  /**
   * PostgreSQL: a query with no answer after this long has its connection closed, so that a
   * server gone silent (a network partition, a frozen host) fails requests instead of hanging
   * them. 0 turns it off (migrations: an index build may take long). Default 0.
   */
  queryTimeoutMs?: number;
  /**
   * PostgreSQL: told when a connection that was not running a query fails (the server restarted,
   * a backend was terminated). The pool drops that connection and opens another when one is
   * needed; without a listener such an error would be thrown and end the process.
   */
  onConnectionError?: (err: Error) => void;
  /**
   * SQLite: told if the checkpoint thread fails (store/sqlite-checkpointer.ts); checkpoints then
   * run in commits again, as SQLite does by default.
   */
  onCheckpointThreadError?: (err: Error) => void;
}

/** Rows per index an ANALYZE of the SQLite connection samples (`PRAGMA analysis_limit`). */
export const SQLITE_ANALYSIS_LIMIT = 2000;

// PostgreSQL returns bigint (count) as strings by default; counts here are far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

function sqlitePath(url: string): string {
  const path = url.replace(/^sqlite:(\/\/)?/, '');
  if (path === '') throw new Error('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/matricula.sqlite');
  return path;
}

function openSqlite(url: string, options: OpenOptions): Store {
  const path = sqlitePath(url);
  const inMemory = path === ':memory:';
  if (!inMemory) mkdirSync(dirname(path), { recursive: true });
  const database = new SqliteDatabase(path);
  // WAL lets the CLI and readers work while the server writes; busy_timeout waits for the lock.
  database.pragma('journal_mode = WAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  database.pragma('synchronous = NORMAL');
  // SQLite's default, stated: lowered while background batches run (store/batch-checkpoints.ts).
  database.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  // Deleted and overwritten content is zeroed in the file, not left in free space: a redacted
  // session's old values must not be readable there (store/erasure.ts empties the WAL).
  database.pragma('secure_delete = ON');
  // ANALYZE (the planner's statistics, store/dialect.ts `refreshStatistics`) samples each index
  // rather than reading it whole: after 200,000 spent nonces, PRAGMA optimize took 38 ms without a
  // limit and 8 ms at 400 or 2,000 rows (with the same statistics at 2,000), on the event loop's
  // thread, in the first purge of a burst (bench/scale.ts).
  database.pragma(`analysis_limit = ${SQLITE_ANALYSIS_LIMIT}`);
  // A database in memory has no write-ahead log to copy.
  const checkpointer = inMemory
    ? undefined
    : new SqliteCheckpointer(database, path, options.onCheckpointThreadError ?? (() => undefined));
  const driver = new ImmediateSqliteDriver({ database, onCommit: checkpointer && (() => checkpointer.committed()) });
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new SqliteIntrospector(k),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
  allowDirectReads(db, driver);
  watchDiskOf(db, path);
  if (checkpointer) checkpointInThread(db, checkpointer);
  const close = async () => {
    await checkpointer?.close();
    await db.destroy();
  };
  return { db, capabilities: SQLITE, close };
}

function openPostgres(url: string, options: OpenOptions): Store {
  const onConnectionError = options.onConnectionError ?? (() => undefined);
  const config: PreparingPgConfig = {
    // Runs the hot-path queries as named prepared statements (store/prepared.ts).
    Client: PreparingPgClient,
    connectionString: url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    // A peer that vanished without closing (a failover, a cut network) is found by TCP keepalive.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    queryDeadlineMs: options.queryTimeoutMs ?? 0,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  };
  const pool = new pg.Pool(config);
  // An idle connection that fails is removed by the pool, which then emits 'error': unheard, that
  // event would end the process. A connection that fails while checked out between two queries
  // (inside a transaction) emits 'error' on its client, which the pool does not listen to then:
  // the same. Its next query fails, the request answers 503 and the pool drops the client.
  pool.on('error', onConnectionError);
  pool.on('connect', (client) => client.on('error', onConnectionError));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, capabilities: POSTGRES, pgPool: pool, schema: options.schema, close: () => db.destroy() };
}

/** Opens `sqlite:PATH` or `postgres://…`. Does not migrate: call {@link migrate}. */
export async function openStore(url: string, options: OpenOptions = {}): Promise<Store> {
  if (url.startsWith('sqlite:')) return openSqlite(url, options);
  if (options.schema) {
    if (!/^[a-z_][a-z0-9_]*$/.test(options.schema)) throw new Error(`invalid schema name ${options.schema}`);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query(`create schema if not exists ${options.schema}`);
    } finally {
      await admin.end();
    }
  }
  const store = openPostgres(url, options);
  // The migrator must know the schema it works in; a URL may set one through search_path.
  store.schema ??= (await sql<{ schema: string }>`select current_schema() as schema`.execute(store.db)).rows[0]?.schema;
  return store;
}

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/**
 * The pending migrations in runs of consecutive ones that share a mode: inside a transaction (the
 * default) or not (`transactional = false`), each run ending at its last migration's name.
 */
function migrationRuns(pending: readonly string[]): Array<{ last: string; transactional: boolean }> {
  const runs: Array<{ last: string; transactional: boolean }> = [];
  for (const name of pending) {
    const transactional = MIGRATIONS[name]?.transactional !== false;
    const current = runs[runs.length - 1];
    if (current && current.transactional === transactional) current.last = name;
    else runs.push({ last: name, transactional });
  }
  return runs;
}

/**
 * Brings the schema up to date; safe to run from several processes at once (kysely locks). On
 * PostgreSQL the pending migrations run in one transaction per run of transactional ones, and a
 * migration that builds indexes without locking its tables (`transactional = false`) runs outside
 * any, under the same lock. A run that another process finished first finds nothing to do (no
 * migration has a `down`, so a target behind the database's state changes nothing).
 */
export async function migrate(store: Pick<Store, 'db' | 'schema'>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await migrateOnce(store);
      break;
    } catch (err) {
      if (attempt === 5 || !anotherSchemaVanished(err, store.schema)) throw err;
    }
  }
  await refreshPlannerStatistics(store.db);
}

/**
 * Renews the query planner's statistics of tables whose size changed much since they were taken
 * (SQLite; PostgreSQL's autovacuum does it itself): store/dialect.ts, `refreshStatistics`.
 */
export function refreshPlannerStatistics(db: Db): Promise<void> {
  return capabilitiesOf(db).refreshStatistics(db);
}

/** Runs a run of background batches on `db` as its dialect keeps requests quick meanwhile (store/dialect.ts). */
export function duringBatches<T>(db: Db, work: () => Promise<T>): Promise<T> {
  return capabilitiesOf(db).duringBatches(db, work);
}

/**
 * Kysely's migrator reads the tables of every schema of the database; a schema another program
 * drops at that moment (another service sharing the PostgreSQL database, or a test file) fails that
 * read with 'schema "…" does not exist', naming the other schema. Nothing of ours was changed:
 * migrating again is safe.
 */
export function anotherSchemaVanished(err: unknown, schema: string | undefined): boolean {
  const named = /schema "([^"]+)" does not exist/.exec(String(err instanceof Error ? err.message : err))?.[1];
  return named !== undefined && named !== (schema ?? 'public');
}

async function migrateOnce(store: Pick<Store, 'db' | 'schema'>): Promise<void> {
  const options = { db: store.db, provider, ...(store.schema ? { migrationTableSchema: store.schema } : {}) };
  const pending = (await new Migrator(options).getMigrations()).filter((m) => !m.executedAt).map((m) => m.name);
  for (const run of migrationRuns(pending)) {
    const migrator = new Migrator({ ...options, disableTransactions: !run.transactional });
    const { error, results } = await migrator.migrateTo(run.last);
    const failed = results?.find((r) => r.status === 'Error');
    if (error || failed) {
      throw new Error(
        `database migration ${failed?.migrationName ?? ''} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}
