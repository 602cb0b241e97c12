import type { Clock } from '../domain/clock.ts';
import { migrate, openStore, type Store } from './db.ts';
import { isDatabaseUnavailable } from './unavailable.ts';

/** What start-up and the connection listener write; pino's logger fits. */
export interface DatabaseLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface DatabaseStartOptions {
  url: string;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  clock: Clock;
  log: DatabaseLog;
  /** Waits between attempts while the database is unreachable, the last one repeated. */
  retryDelaysMs?: readonly number[];
}

const RETRY_DELAYS_MS = [500, 1_000, 2_000, 5_000];

/** How long one burst of lost connections is reported as one line. */
const CONNECTION_ERROR_QUIET_MS = 60_000;

/**
 * A listener for connections lost outside a query (store/db.ts onConnectionError): the first of a
 * burst is logged as a warning; the rest within the next minute only counted, and the count is
 * reported with the next burst. A restart of PostgreSQL drops every pooled connection at once, and
 * that is one event for the operator, not ten lines.
 */
export function connectionErrorLog(log: DatabaseLog, clock: Clock): (err: Error) => void {
  let quietUntil = -Infinity;
  let unreported = 0;
  return (err) => {
    const now = clock.now().getTime();
    if (now < quietUntil) {
      unreported++;
      return;
    }
    quietUntil = now + CONNECTION_ERROR_QUIET_MS;
    log.warn(
      { err: { message: err.message, code: (err as { code?: unknown }).code }, alsoLostSinceLastReport: unreported },
      'lost a database connection; the pool opens a new one when needed',
    );
    unreported = 0;
  };
}

/**
 * Opens and migrates the database, waiting for it when it is unreachable (PostgreSQL starting,
 * restarting, failing over) instead of exiting: a process started before its database, or beside
 * a database that is being restarted, comes up once the database does, without a supervisor's
 * restart loop. Errors that waiting cannot fix (a wrong password, a missing database, a failed
 * migration) still end the start.
 *
 * The migration runs on a connection with no query deadline (an index build may take long); the
 * store returned serves with `queryTimeoutMs`.
 */
export async function openDatabaseWhenReachable(options: DatabaseStartOptions): Promise<Store> {
  const { url, clock, log } = options;
  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS;
  const onConnectionError = connectionErrorLog(log, clock);
  const onCheckpointThreadError = (err: Error) =>
    log.warn(
      { err: { message: err.message } },
      'the SQLite checkpoint thread failed; checkpoints run in commits again, as SQLite does by default',
    );
  const common = { connectTimeoutMs: options.connectTimeoutMs, onConnectionError, onCheckpointThreadError };
  for (let attempt = 0; ; attempt++) {
    let store: Store | undefined;
    try {
      const migrating = await openStore(url, { ...common, queryTimeoutMs: 0, poolSize: 1 });
      try {
        await migrate(migrating);
      } finally {
        await migrating.close();
      }
      store = await openStore(url, { ...common, queryTimeoutMs: options.queryTimeoutMs });
      if (attempt > 0) log.info({ attempts: attempt + 1 }, 'the database is reachable; starting');
      return store;
    } catch (err) {
      await store?.close().catch(() => undefined);
      // SQLite is a file: nothing comes back by waiting (a full disk is the server's 503, later).
      if (!isDatabaseUnavailable(err) || url.startsWith('sqlite:')) throw err;
      const delayMs = delays[Math.min(attempt, delays.length - 1)];
      // Every attempt is a line: a start that waits is rare, and the operator is watching it.
      log.warn(
        {
          err: { message: err instanceof Error ? err.message : String(err) },
          attempt: attempt + 1,
          retryInMs: delayMs,
        },
        'the database is unreachable; waiting for it',
      );
      await new Promise<void>((resolve) => clock.setTimeout(resolve, delayMs));
    }
  }
}
