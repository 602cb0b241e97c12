import { CompiledQuery, type Compilable, type QueryResult } from 'kysely';
import type { Db } from './db.ts';
import { capabilitiesOf, nameStatement, readDirectly, type DialectCapabilities } from './dialect.ts';

/**
 * A query of a hot path (authentication, the session read and insert), built with the query
 * builder as usual but compiled once per dialect instead of on every call: building and compiling
 * cost more than running the query itself on SQLite. On PostgreSQL it also runs as a named
 * prepared statement (dialect.ts PreparingPgClient); on SQLite the driver keeps every prepared
 * statement anyway, and a read on the store's own instance while no transaction holds the
 * connection runs at once, outside Kysely's executor (dialect.ts readDirectly). Runs on the Db it
 * is given, so inside a transaction it runs in it; on a Db with plugins it is built and compiled
 * as any query, so that the plugins see it.
 */
export interface PreparedQuery<P, Row> {
  execute(db: Db, params: P): Promise<QueryResult<Row>>;
}

/** A parameter slot of the compiled SQL: a named value of the call, or a constant of the query. */
type Slot<P> = { param: keyof P } | { constant: unknown };

interface Template<P> {
  sql: string;
  slots: Slot<P>[];
}

const PLACEHOLDER = '\u0000prepared-parameter:';

/**
 * `build` receives placeholders in place of the values of `P` and must use each only where the
 * query takes one bound value (a comparison, an inserted value, a limit, an array on PostgreSQL),
 * never as a list of values or a name.
 */
export function prepareQuery<P extends Record<string, unknown>, Row>(
  name: string,
  build: (db: Db, params: P) => Compilable<Row>,
): PreparedQuery<P, Row> {
  const placeholders = new Proxy({} as P, { get: (_target, key) => `${PLACEHOLDER}${String(key)}` });
  const templates = new Map<DialectCapabilities['name'], Template<P>>();

  function compile(db: Db, capabilities: DialectCapabilities): Template<P> {
    const compiled = build(db, placeholders).compile();
    const slots = compiled.parameters.map((value): Slot<P> =>
      typeof value === 'string' && value.startsWith(PLACEHOLDER)
        ? { param: value.slice(PLACEHOLDER.length) as keyof P }
        : { constant: value },
    );
    const template = { sql: compiled.sql, slots };
    if (capabilities.namedStatements) nameStatement(template.sql, `matricula_${name}`);
    templates.set(capabilities.name, template);
    return template;
  }

  return {
    execute(db, params) {
      // An instance with plugins runs the query as built, for its plugins to see (and change).
      if (db.getExecutor().plugins.length > 0) return db.executeQuery<Row>(build(db, params).compile());
      const capabilities = capabilitiesOf(db);
      const template = templates.get(capabilities.name) ?? compile(db, capabilities);
      const parameters = template.slots.map((slot) => ('param' in slot ? params[slot.param] : slot.constant));
      try {
        const rows = readDirectly(db, template.sql, parameters);
        if (rows) return Promise.resolve({ rows: rows as Row[] });
      } catch (err) {
        return Promise.reject(err as Error);
      }
      return db.executeQuery<Row>(CompiledQuery.raw(template.sql, parameters));
    },
  };
}
