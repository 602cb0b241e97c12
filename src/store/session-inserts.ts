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
 * Group commit for new sessions. An insert starts at once when none is running; those that arrive
 * while one is (on PostgreSQL, a round trip and a commit) wait and go together in the next
 * multi-row INSERT, one statement and one commit for all of them. No insert waits for a timer, and
 * each caller's promise settles only once its row is committed, as with a single INSERT. If a
 * batch fails, each of its sessions is inserted alone, so one bad row fails only its own caller.
 * On SQLite a write takes no round trip, so only inserts that arrive in the same turn of the
 * event loop are grouped.
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
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
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
