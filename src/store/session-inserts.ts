import type { Session } from '../domain/session.ts';
import type { Db } from './db.ts';
import { insertSession, insertSessions } from './sessions.ts';

/** Most sessions one INSERT writes. */
const MAX_BATCH = 64;

interface Pending {
  session: Session;
  resolve: () => void;
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
 */
export class SessionInserts {
  readonly #db: Db;
  #queue: Pending[] = [];
  #running = false;

  constructor(db: Db) {
    this.#db = db;
  }

  insert(session: Session): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ session, resolve, reject });
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
      await insertSession(this.#db, pending.session);
      pending.resolve();
    } catch (err) {
      pending.reject(err);
    }
  }

  async #together(batch: Pending[]): Promise<void> {
    try {
      await insertSessions(
        this.#db,
        batch.map((p) => p.session),
      );
    } catch {
      for (const pending of batch) await this.#alone(pending);
      return;
    }
    for (const pending of batch) pending.resolve();
  }
}
