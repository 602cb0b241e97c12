import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import type { CompiledQuery, DatabaseConnection, QueryResult } from 'kysely';
import { BoundedCache } from '../domain/bounded-cache.ts';

/** How many prepared SQLite statements a connection keeps; the least recently used goes beyond it. */
const SQLITE_STATEMENT_CACHE = 256;

/** A statement that changes the schema: the result columns of a kept `select *` may change with it. */
const SCHEMA_CHANGE = /^\s*(alter|create|drop)\b/i;

/** Makes one raw row (its values in column order) an object. */
type RowMaker = (values: readonly unknown[]) => Record<string, unknown>;

/** A kept statement, and for one that returns rows the names of its result columns. */
interface KeptStatement {
  statement: Statement;
  /** Null for a statement that returns no rows. */
  columns: string[] | null;
  /** Made from `columns`, when they are read. */
  makeRow: RowMaker | null;
  /** The connection's schema generation when `columns` were read. */
  generation: number;
  /** An ALTER, CREATE or DROP: running it moves the generation on. */
  changesSchema: boolean;
}

const columnNames = (statement: Statement): string[] => statement.columns().map((column) => column.name);

/**
 * Makes rows as better-sqlite3 makes them outside raw mode: the columns as properties, in their
 * order, a later column of a name replacing an earlier one. Compiled once per statement to one
 * object literal (`{"id": v[0], "org_id": v[1], …}`), which V8 creates from a template in one
 * step with every property in the object. Adding the properties one by one by name (`row[name] =
 * value`) goes through V8's slow keyed store for each, and past 16 properties turns the object
 * into a hash table, so every later read of the row is a lookup too: a session row has 30
 * columns. Under callgrind that loop cost a session GET about 18,000 instructions
 * (bench/route-instructions.ts: 272 → 250 thousand a GET); bench/sqlite-rows.ts, same run: a
 * session row 4.9 → 4.2 µs, a page of 100 sessions 290 → 232 µs. The names are the statement's own, quoted as JSON (a valid
 * string literal); `__proto__` is written as a computed key, which defines the property rather
 * than setting the prototype.
 */
function rowMaker(columns: readonly string[]): RowMaker {
  const properties = columns.map((name, i) => {
    const key = JSON.stringify(name);
    return `${name === '__proto__' ? `[${key}]` : key}: v[${i}]`;
  });
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the source is the quoted column names above
  return new Function('v', `return { ${properties.join(', ')} };`) as RowMaker;
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
      kept = {
        statement,
        columns,
        makeRow: columns && rowMaker(columns),
        generation: this.#generation,
        changesSchema: SCHEMA_CHANGE.test(text),
      };
      this.#statements.set(text, kept);
    }
    return kept;
  }

  /** The rows of a statement that returns rows (`kept.columns` set), as objects. */
  #rows(kept: KeptStatement, parameters: readonly unknown[]): Record<string, unknown>[] {
    const values = kept.statement.all(parameters) as unknown[][];
    if (values.length === 0) return [];
    if (kept.generation !== this.#generation || values[0].length !== kept.columns!.length) {
      kept.columns = columnNames(kept.statement);
      kept.makeRow = rowMaker(kept.columns);
      kept.generation = this.#generation;
    }
    return values.map(kept.makeRow!);
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
