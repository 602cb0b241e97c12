import { sql, type AliasedRawBuilder, type Selectable } from 'kysely';
import type { Db } from './db.ts';
import { capabilitiesOf } from './dialect.ts';
import { prepareQuery } from './prepared.ts';
import type { SessionsTable } from './schema.ts';
import {
  KEY_ROW_COLUMNS,
  keyOfRow,
  lookupKeyByHash,
  lookupKeyWithSession,
  revokedOrUnknown,
  type KeyLookup,
} from './api-keys.ts';
import { SESSION_COLUMNS, toSession } from './sessions.ts';
import type { Session } from '../domain/session.ts';
import type { Principal } from '../domain/principal.ts';
import { BoundedCache } from '../domain/bounded-cache.ts';

type WithSession = KeyLookup & { session?: Session };

interface Waiting<T> {
  keyHash: string;
  sessionId?: string;
  resolve: (found: T) => void;
  reject: (err: unknown) => void;
}

/** Most lookups one statement reads. */
const MAX_GROUP = 64;

/** Most keys whose principal this process recalls (a few hundred bytes each). */
const MAX_RECALLED = 10_000;

/** Active keys among many hashes, with each row's hash to tell them apart. */
const keysByHashes = prepareQuery('keys_by_hashes', (db, p: { keyHashes: string[] }) =>
  db
    .selectFrom('api_keys')
    .innerJoin('applications', 'applications.id', 'api_keys.app_id')
    .select(['api_keys.key_hash', ...KEY_ROW_COLUMNS])
    .where('api_keys.key_hash', '=', sql<string>`any(${p.keyHashes})`),
);

/**
 * The pairs as a table `wanted(key_hash, session_id, n)`. Kysely names an aliased expression but
 * not its columns, which a function of several columns needs: the alias is written here and its
 * type given.
 */
function wantedPairs(keyHashes: string[], sessionIds: string[]) {
  return sql`unnest(${keyHashes}::text[], ${sessionIds}::text[]) with ordinality`.as(
    sql`wanted(key_hash, session_id, n)`,
  ) as unknown as AliasedRawBuilder<{ key_hash: string; session_id: string; n: string }, 'wanted'>;
}

/**
 * Many (key hash, session id) pairs in one statement: each pair's key and, when it belongs to the
 * key's organization, the session; `n` is the pair's place in the arrays (1-based).
 */
const keysWithSessions = prepareQuery('keys_with_sessions', (db, p: { keyHashes: string[]; sessionIds: string[] }) =>
  db
    .selectFrom(wantedPairs(p.keyHashes, p.sessionIds))
    .innerJoin('api_keys', 'api_keys.key_hash', 'wanted.key_hash')
    .innerJoin('applications', 'applications.id', 'api_keys.app_id')
    .leftJoin('sessions', (join) =>
      join.onRef('sessions.id', '=', 'wanted.session_id').onRef('sessions.org_id', '=', 'api_keys.org_id'),
    )
    .select(['wanted.n', ...KEY_ROW_COLUMNS])
    .select(SESSION_COLUMNS),
);

/**
 * The key reads of authentication (http/auth.ts), grouped on PostgreSQL: the lookups that start in
 * one turn of the event loop go to the server together, one statement and one round trip for all
 * of them instead of one each. Each is still a read made after its request arrived, so a revoked
 * key is refused by the very next request as before. On SQLite a read takes no round trip and runs
 * at once, alone.
 */
export class KeyLookups {
  readonly #db: Db;
  readonly #grouped: boolean;
  readonly #recalled = new BoundedCache<string, Principal>(MAX_RECALLED);
  #byHash: Waiting<KeyLookup>[] = [];
  #withSession: Waiting<WithSession>[] = [];
  #scheduled = false;

  constructor(db: Db) {
    this.#db = db;
    this.#grouped = capabilitiesOf(db).statementRoundTrips;
  }

  /**
   * Notes whom a key of this hash authenticated, for a route that confirms the key in its own write
   * (http/auth.ts, `confirmsKey`). Only where a read is a round trip (PostgreSQL): elsewhere
   * nothing is kept and {@link recall} finds nothing.
   */
  remember(keyHash: string, principal: Principal): void {
    if (this.#grouped) this.#recalled.set(keyHash, principal);
  }

  /** Whom a key of this hash authenticated last in this process; never proof that it still does. */
  recall(keyHash: string): Principal | undefined {
    return this.#recalled.get(keyHash);
  }

  /** Forgets the key of this hash: a write refused it. */
  forget(keyHash: string): void {
    this.#recalled.delete(keyHash);
  }

  /** The key of this hash, as {@link lookupKeyByHash}. */
  byHash(keyHash: string): Promise<KeyLookup> {
    if (!this.#grouped) return lookupKeyByHash(this.#db, keyHash);
    return new Promise((resolve, reject) => {
      this.#byHash.push({ keyHash, resolve, reject });
      this.#schedule();
    });
  }

  /** The key of this hash with the session of that id, as {@link lookupKeyWithSession}. */
  withSession(keyHash: string, sessionId: string): Promise<WithSession> {
    if (!this.#grouped) return lookupKeyWithSession(this.#db, keyHash, sessionId);
    return new Promise((resolve, reject) => {
      this.#withSession.push({ keyHash, sessionId, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // The rest of this turn: every request whose headers were read in it joins the group.
    setImmediate(() => {
      this.#scheduled = false;
      const byHash = this.#byHash;
      const withSession = this.#withSession;
      this.#byHash = [];
      this.#withSession = [];
      for (let i = 0; i < byHash.length; i += MAX_GROUP) void this.#readKeys(byHash.slice(i, i + MAX_GROUP));
      for (let i = 0; i < withSession.length; i += MAX_GROUP)
        void this.#readKeysWithSessions(withSession.slice(i, i + MAX_GROUP));
    });
  }

  async #readKeys(group: Waiting<KeyLookup>[]): Promise<void> {
    try {
      if (group.length === 1) return group[0].resolve(await lookupKeyByHash(this.#db, group[0].keyHash));
      const keyHashes = [...new Set(group.map((w) => w.keyHash))];
      const { rows } = await keysByHashes.execute(this.#db, { keyHashes });
      const found = new Map(rows.map((row) => [row.key_hash, row]));
      for (const waiting of group) {
        const row = found.get(waiting.keyHash);
        if (row) waiting.resolve({ kind: 'active', key: keyOfRow(row), appStatus: row.app_status });
        else revokedOrUnknown(this.#db, waiting.keyHash).then(waiting.resolve, waiting.reject);
      }
    } catch (err) {
      for (const waiting of group) waiting.reject(err);
    }
  }

  async #readKeysWithSessions(group: Waiting<WithSession>[]): Promise<void> {
    try {
      if (group.length === 1) {
        const [only] = group;
        return only.resolve(await lookupKeyWithSession(this.#db, only.keyHash, only.sessionId as string));
      }
      const { rows } = await keysWithSessions.execute(this.#db, {
        keyHashes: group.map((w) => w.keyHash),
        sessionIds: group.map((w) => w.sessionId as string),
      });
      const found = new Map(rows.map((row) => [Number(row.n), row]));
      group.forEach((waiting, i) => {
        const row = found.get(i + 1);
        if (!row) return void revokedOrUnknown(this.#db, waiting.keyHash).then(waiting.resolve, waiting.reject);
        const session = row.id === null ? undefined : toSession(row as Selectable<SessionsTable>);
        waiting.resolve({ kind: 'active', key: keyOfRow(row), appStatus: row.app_status, session });
      });
    } catch (err) {
      for (const waiting of group) waiting.reject(err);
    }
  }
}
