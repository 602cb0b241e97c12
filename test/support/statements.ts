import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';

/**
 * Counts the statements this process sends to its databases, at the driver: every query a pg
 * client sends (BEGIN and COMMIT included, each one round trip) and every SQLite statement run.
 * The counts are exact and the same on every run, so a test may assert them; they say nothing of
 * time. Install before the store is opened: a pg client binds its query method when it is made.
 */
export interface StatementCounter {
  /** Runs `body` and returns the statements sent meanwhile, in order. */
  during(body: () => Promise<unknown>): Promise<string[]>;
}

let active: string[] | undefined;
let installed: StatementCounter | undefined;

function textOf(args: unknown[]): string {
  const first = args[0];
  if (typeof first === 'string') return first;
  if (first && typeof first === 'object' && 'text' in first) return String((first as { text: unknown }).text);
  return String(first);
}

export function installStatementCounter(): StatementCounter {
  if (installed) return installed;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with its client as this, below
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    active?.push(textOf(args));
    return query.apply(this, args);
  } as pg.Client['query'];
  const probe = new SqliteDatabase(':memory:');
  const statement = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, unknown>;
  probe.close();
  for (const method of ['run', 'all', 'get', 'iterate']) {
    const original = statement[method] as (...args: unknown[]) => unknown;
    statement[method] = function (this: { source: string }, ...args: unknown[]) {
      active?.push(this.source);
      return original.apply(this, args);
    };
  }
  installed = {
    async during(body) {
      if (active) throw new Error('statement counts do not nest');
      const seen: string[] = [];
      active = seen;
      try {
        await body();
      } finally {
        active = undefined;
      }
      return seen;
    },
  };
  return installed;
}
