import type { KeyToConfirm } from '../domain/principal.ts';
import type { Session } from '../domain/session.ts';
import type { Db } from './db.ts';
import { capabilitiesOf } from './dialect.ts';
import { insertSession, insertSessions, insertSessionsCheckingKeys } from './sessions.ts';

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
