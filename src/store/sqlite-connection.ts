import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import type { CompiledQuery, DatabaseConnection, QueryResult } from 'kysely';
import { BoundedCache } from '../domain/bounded-cache.ts';

/** How many prepared SQLite statements a connection keeps; the least recently used goes beyond it. */
const SQLITE_STATEMENT_CACHE = 256;

/** A statement that changes the schema: the result columns of a kept `select *` may change with it. */
const SCHEMA_CHANGE = /^\s*(alter|create|drop)\b/i;

/** A kept statement, and for one that returns rows the names of its result columns. */
interface KeptStatement {
  statement: Statement;
  /** Null for a statement that returns no rows. */
  columns: string[] | null;
  /** The connection's schema generation when `columns` were read. */
  generation: number;
  /** An ALTER, CREATE or DROP: running it moves the generation on. */
  changesSchema: boolean;
}

const columnNames = (statement: Statement): string[] => statement.columns().map((column) => column.name);

/**
 * A row as better-sqlite3 makes it outside raw mode: the columns as properties, in their order, a
 * later column of a name replacing an earlier one.
 */
function rowObject(columns: readonly string[], values: readonly unknown[]): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < columns.length; i++) row[columns[i]] = values[i];
  return row;
}

/**
 * Kysely's SQLite connection prepares every statement on every call; this one keeps the prepared
 * statements by SQL text (a bounded cache), so a query run again costs a bind and a step.
 *
 * A statement that returns rows runs in raw mode (each row an array) and its rows are made objects
 * here, with its column names read once. better-sqlite3 otherwise makes each name a JavaScript
 * string again for every column of every row and adds the properties one by one from C++: in a
 * profile of session GETs that took 11 % of the service's CPU, more than SQLite's own step (7 %).
 * bench/sqlite-rows.ts: a session row 7.5 → 6.1 µs, a page of 100 sessions 602 → 425 µs. The names
 * are read again after a schema change run on this connection (a migration), or when another
 * process changed how many columns a `select *` returns.
 */
export class StatementCachingSqliteConnection implements DatabaseConnection {
  readonly #db: SqliteDatabase;
  readonly #statements = new BoundedCache<string, KeptStatement>(SQLITE_STATEMENT_CACHE);
  readonly #onCommit: () => void;
  /** Counts the schema changes run on this connection. */
  #generation = 0;

  constructor(db: SqliteDatabase, onCommit: () => void) {
    this.#db = db;
    this.#onCommit = onCommit;
  }

  #prepare(text: string): KeptStatement {
    let kept = this.#statements.get(text);
    if (!kept) {
      const statement = this.#db.prepare(text);
      const columns = statement.reader ? columnNames(statement.raw(true)) : null;
      kept = { statement, columns, generation: this.#generation, changesSchema: SCHEMA_CHANGE.test(text) };
      this.#statements.set(text, kept);
    }
    return kept;
  }

  /** The rows of a statement that returns rows (`kept.columns` set), as objects. */
  #rows(kept: KeptStatement, parameters: readonly unknown[]): Record<string, unknown>[] {
    const values = kept.statement.all(parameters) as unknown[][];
    if (values.length === 0) return [];
    let columns = kept.columns as string[];
    if (kept.generation !== this.#generation || values[0].length !== columns.length) {
      kept.columns = columns = columnNames(kept.statement);
      kept.generation = this.#generation;
    }
    return values.map((row) => rowObject(columns, row));
  }

  /** Runs a read now, synchronously, on its kept statement (ImmediateSqliteDriver.readIfIdle). */
  read(text: string, parameters: readonly unknown[]): unknown[] | undefined {
    const kept = this.#prepare(text);
    // `reader` alone is also true of an INSERT … RETURNING: only a statement that writes nothing.
    return kept.statement.reader && kept.statement.readonly ? this.#rows(kept, parameters) : undefined;
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const kept = this.#prepare(compiledQuery.sql);
    const parameters = compiledQuery.parameters as unknown[];
    if (kept.statement.reader) return Promise.resolve({ rows: this.#rows(kept, parameters) as R[] });
    const { changes, lastInsertRowid } = kept.statement.run(parameters);
    if (kept.changesSchema) this.#generation++;
    // A write outside a transaction, or the COMMIT of one (a BEGIN leaves one open).
    if (!this.#db.inTransaction) this.#onCommit();
    return Promise.resolve({ numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] });
  }

  // eslint-disable-next-line require-yield -- Kysely's interface; nothing here streams
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used on SQLite');
  }
}
