/**
 * Which database errors mean "the database cannot serve now, try again soon" rather than "this
 * request is wrong" or "our code is wrong". The API answers those with 503 and Retry-After, the
 * readiness probe fails, the worker and the jobs back off; nothing else is retried.
 *
 * Both drivers are covered: node-postgres (socket errors, its own connection errors, SQLSTATEs)
 * and better-sqlite3 (SQLite's extended result codes).
 */

/** Socket-level failures: the server is down, restarting, or out of reach. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that cannot work now (PostgreSQL Appendix A): connection exceptions (class
 * 08), insufficient resources (class 53: disk full, out of memory, too many connections),
 * operator intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now,
 * 57P05 idle session timeout), and a read-only transaction (25006: a standby after a failover,
 * or default_transaction_read_only during maintenance).
 */
function unavailableSqlState(code: string): boolean {
  return (
    code.startsWith('08') || code.startsWith('53') || code === '25006' || (code.startsWith('57P') && code !== '57P04')
  );
}

/** node-postgres' own errors for a connection that is gone or never came. */
const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Connection closed',
  'the database query took longer than',
];

/**
 * SQLite result codes of a database that cannot write now: the disk is full, the file is
 * read-only or locked beyond busy_timeout, or an I/O error (a vanished disk). Extended codes
 * (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED…) share their primary code's prefix.
 */
const SQLITE_PREFIXES = ['SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_IOERR', 'SQLITE_BUSY', 'SQLITE_CANTOPEN'];

/** The database cannot serve now; the same request later may well succeed. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string') {
      if (NETWORK_CODES.has(code)) return true;
      if (/^[0-9A-Z]{5}$/.test(code) && unavailableSqlState(code)) return true;
      if (SQLITE_PREFIXES.some((prefix) => code.startsWith(prefix))) return true;
    }
    if (typeof message === 'string' && PG_CONNECTION_MESSAGES.some((m) => message.includes(m))) return true;
    // AggregateError (a connect that tried IPv4 and IPv6) and wrapped causes.
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.some((inner) => isDatabaseUnavailable(inner))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
