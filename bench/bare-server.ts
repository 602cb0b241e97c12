/**
 * The baseline of bench/sessions.ts: a bare node:http server, in a process of its own as the
 * service is, that answers POST with BARE_CREATE_BODY (201) and anything else with BARE_READ_BODY
 * (200). It parses a POST body as JSON, as any server would. Listens on 127.0.0.1:BARE_PORT and
 * prints "listening" once it does. With BARE_WORK_US it first spends that many microseconds of
 * CPU on each request (a busy loop): the calibration of `--calibrate`, what ratio a server that
 * does a known amount of work more than the bare one reaches under the same client.
 *
 * With BARE_FLOOR_DATABASE_URL (the service's own database, SQLite or PostgreSQL, while the service
 * runs) it is the floor of `--floor`: it does what no design of these routes can skip while every
 * request must see a revocation at once and a created session must be stored before it is
 * answered, and nothing else. A GET: the bearer key's SHA-256 and the one read of the key, its
 * application and the session (the service's `key_with_session` statement, the SQL below). A POST:
 * the body parsed, the key's hash and read, and a session row inserted (a copy of the service's
 * first session with a new nonce and an id made as the service makes them, in time order),
 * committed in a group as the service's group commit does, before answering. Statements prepared
 * once (better-sqlite3; named statements on PostgreSQL, a pool of 10 as the service's); the same
 * bodies answered.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Database from 'better-sqlite3';
import pg from 'pg';
import { newId } from '../src/domain/ids.ts';

const createBody = process.env.BARE_CREATE_BODY ?? '{}';
const readBody = process.env.BARE_READ_BODY ?? '{}';
const workUs = Number(process.env.BARE_WORK_US ?? 0);

/** Spends `workUs` of this process's CPU time (not wall time: a loop descheduled spends none). */
function work(): void {
  if (workUs === 0) return;
  const start = process.cpuUsage();
  for (;;) {
    const spent = process.cpuUsage(start);
    if (spent.user + spent.system >= workUs) return;
  }
}

/**
 * What src/store/api-keys.ts `keyWithSession` compiles to: the key by its hash, its application,
 * and the session of that id if it belongs to the key's organization (`?` on SQLite, `$n` on
 * PostgreSQL).
 */
const keyWithSessionSql = (sessionParam: string, hashParam: string) =>
  `select "api_keys"."id" as "key_id", "api_keys"."app_id" as "key_app_id",
  "api_keys"."org_id" as "key_org_id", "api_keys"."name" as "key_name",
  "api_keys"."environment" as "key_environment", "api_keys"."key_hint",
  "api_keys"."created_at" as "key_created_at", "applications"."status" as "app_status", "sessions".*
  from "api_keys" inner join "applications" on "applications"."id" = "api_keys"."app_id"
  left join "sessions" on "sessions"."id" = ${sessionParam} and "sessions"."org_id" = "api_keys"."org_id"
  where "api_keys"."key_hash" = ${hashParam}`;
const FIRST_SESSION = 'select * from "sessions" order by "id" limit 1';
const BEARER = /^Bearer\s+(\S+)\s*$/i;
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };
/** Most sessions one INSERT writes, as in src/store/session-inserts.ts. */
const MAX_BATCH = 64;

type Row = Record<string, unknown>;
type Found = { id: string | null } | undefined;

/** The floor's work on the service's database: the key's read, and a session's insert. */
interface Floor {
  /** The key's row, with the session's `id` or null; undefined when the key is unknown. */
  read(keyHash: string, sessionId: string, then: (found: Found) => void): void;
  /** Stores a new session, grouped with the others queued in the same turn; `then` once committed. */
  insert(then: () => void): void;
}

/** A new session row: the service's first one, with a new id (made as the service makes them) and nonce. */
const newSession = (template: Row): Row => ({
  ...template,
  id: newId('session'),
  challenge_nonce: randomBytes(32).toString('base64url'),
});

function sqliteFloor(path: string): Floor {
  const db = new Database(path);
  const keyWithSession = db.prepare(keyWithSessionSql('?', '?'));
  const template = db.prepare(FIRST_SESSION).get() as Row;
  const columns = Object.keys(template);
  const insert = db.prepare(
    `insert into "sessions" (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`,
  );
  const insertAll = db.transaction((rows: Row[]) => {
    for (const row of rows) insert.run(row);
  });
  let queued: Array<{ row: Row; then: () => void }> = [];
  return {
    read: (keyHash, sessionId, then) => then(keyWithSession.get(sessionId, keyHash) as Found),
    insert(then) {
      queued.push({ row: newSession(template), then });
      if (queued.length > 1) return;
      // One transaction for the turn's inserts, as the service's group commit.
      setImmediate(() => {
        const batch = queued;
        queued = [];
        insertAll(batch.map((b) => b.row));
        for (const b of batch) b.then();
      });
    },
  };
}

async function postgresFloor(url: string): Promise<Floor> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const template = (await pool.query<Row>(FIRST_SESSION)).rows[0];
  const columns = Object.keys(template);
  const insertSql = (rows: number) =>
    `insert into "sessions" (${columns.map((c) => `"${c}"`).join(', ')}) values ${Array.from(
      { length: rows },
      (_, r) => `(${columns.map((_c, i) => `$${r * columns.length + i + 1}`).join(', ')})`,
    ).join(', ')}`;
  const queued: Array<{ row: Row; then: () => void }> = [];
  let running = false;
  // As the service's group commit: the first insert starts at the end of the turn; those queued
  // while a multi-row INSERT runs go in the next one.
  const drain = async () => {
    while (queued.length > 0) {
      const batch = queued.splice(0, MAX_BATCH);
      await pool.query({
        name: `floor_insert_${batch.length}`,
        text: insertSql(batch.length),
        values: batch.flatMap((b) => columns.map((c) => b.row[c])),
      });
      for (const b of batch) b.then();
    }
    running = false;
  };
  return {
    read(keyHash, sessionId, then) {
      pool
        .query({ name: 'floor_key_with_session', text: keyWithSessionSql('$1', '$2'), values: [sessionId, keyHash] })
        .then((result) => then(result.rows[0] as Found), fail);
    },
    insert(then) {
      queued.push({ row: newSession(template), then });
      if (running) return;
      running = true;
      setImmediate(() => void drain().catch(fail));
    },
  };
}

function fail(err: unknown): never {
  console.error(err);
  process.exit(1);
}

const floorUrl = process.env.BARE_FLOOR_DATABASE_URL;
const floor = !floorUrl
  ? undefined
  : floorUrl.startsWith('sqlite:')
    ? sqliteFloor(floorUrl.replace(/^sqlite:(\/\/)?/, ''))
    : await postgresFloor(floorUrl);

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    work();
    const post = req.method === 'POST';
    if (post) JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const answer = () => {
      res.writeHead(post ? 201 : 200, JSON_TYPE);
      res.end(post ? createBody : readBody);
    };
    if (!floor) return answer();
    const secret = BEARER.exec(req.headers.authorization ?? '')?.[1];
    const url = req.url ?? '';
    const keyHash = createHash('sha256')
      .update(secret ?? '')
      .digest('hex');
    floor.read(keyHash, post ? '' : url.slice(url.lastIndexOf('/') + 1), (found) => {
      if (secret === undefined || !found || (!post && found.id === null)) {
        res.writeHead(found ? 404 : 401, JSON_TYPE);
        res.end('{"success":false}');
      } else if (post) floor.insert(answer);
      else answer();
    });
  });
});
server.listen(Number(process.env.BARE_PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
