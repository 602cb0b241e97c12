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
 *
 * With BARE_FRAMEWORK=fastify the same work (or none) is served by Fastify instead of node:http,
 * as the service uses it but with nothing of the service's own (no hooks, schemas or serializer):
 * the floor of a service built on Fastify (`--floor`'s `fastify_floor_*`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Database from 'better-sqlite3';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
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

/** The floor's work on the service's database. */
interface Floor {
  /** The key's row, with the session's `id` or null; undefined when the key is unknown. */
  read(keyHash: string, sessionId: string, then: (found: Found) => void): void;
  /**
   * Stores a new session if the key is known, grouped with the others of the same turn (or queued
   * while a group is written); `then` once committed, with false when the key is unknown.
   */
  create(keyHash: string, then: (stored: boolean) => void): void;
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
  let queued: Array<{ row: Row; then: (stored: boolean) => void }> = [];
  const read = (keyHash: string, sessionId: string) => keyWithSession.get(sessionId, keyHash) as Found;
  return {
    read: (keyHash, sessionId, then) => then(read(keyHash, sessionId)),
    create(keyHash, then) {
      // The key's read first, as the service: in process, it costs no round trip.
      if (!read(keyHash, '')) return then(false);
      queued.push({ row: newSession(template), then });
      if (queued.length > 1) return;
      // One transaction for the turn's inserts, as the service's group commit.
      setImmediate(() => {
        const batch = queued;
        queued = [];
        insertAll(batch.map((b) => b.row));
        for (const b of batch) b.then(true);
      });
    },
  };
}

/**
 * On PostgreSQL a create costs the floor one round trip per group and none per request: each new
 * row carries its key's hash, and the one INSERT of a group stores the rows whose key is known and
 * active (fewer round trips than the service, which reads the key first, then inserts).
 */
async function postgresFloor(url: string): Promise<Floor> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const first = await pool.query<Row>(FIRST_SESSION);
  const template = first.rows[0];
  const columns = first.fields.map((f) => f.name);
  // Each value cast to its column's type: in a VALUES list PostgreSQL cannot infer them.
  const types = await Promise.all(
    first.fields.map(
      async (f) => (await pool.query<{ t: string }>('select format_type($1, null) as t', [f.dataTypeID])).rows[0].t,
    ),
  );
  const width = columns.length + 1;
  const insertSql = (rows: number) =>
    `insert into "sessions" (${columns.map((c) => `"${c}"`).join(', ')})
     select ${columns.map((c) => `v."${c}"`).join(', ')}
     from (values ${Array.from(
       { length: rows },
       (_, r) => `(${[...types, 'text'].map((t, i) => `$${r * width + i + 1}::${t}`).join(', ')})`,
     ).join(', ')}) as v(${[...columns, 'key_hash'].map((c) => `"${c}"`).join(', ')})
     where exists (select 1 from "api_keys" k join "applications" a on a."id" = k."app_id"
                   where k."key_hash" = v."key_hash" and a."status" = 'active')
     returning "id"`;
  const queued: Array<{ row: Row; keyHash: string; then: (stored: boolean) => void }> = [];
  let running = false;
  // As the service's group commit: the first insert starts at the end of the turn; those queued
  // while a multi-row INSERT runs go in the next one.
  const drain = async () => {
    while (queued.length > 0) {
      const batch = queued.splice(0, MAX_BATCH);
      const result = await pool.query<{ id: string }>({
        name: `floor_insert_${batch.length}`,
        text: insertSql(batch.length),
        values: batch.flatMap((b) => [...columns.map((c) => b.row[c]), b.keyHash]),
      });
      const stored = new Set(result.rows.map((r) => r.id));
      for (const b of batch) b.then(stored.has(b.row.id as string));
    }
    running = false;
  };
  return {
    read(keyHash, sessionId, then) {
      pool
        .query({ name: 'floor_key_with_session', text: keyWithSessionSql('$1', '$2'), values: [sessionId, keyHash] })
        .then((result) => then(result.rows[0] as Found), fail);
    },
    create(keyHash, then) {
      queued.push({ row: newSession(template), keyHash, then });
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

/** The floor's (or the plain bare server's) answer to one request, by whatever server received it. */
function handle(
  method: string,
  url: string,
  authorization: string | undefined,
  reply: (status: number, body: string) => void,
): void {
  work();
  const post = method === 'POST';
  const answer = () => reply(post ? 201 : 200, post ? createBody : readBody);
  if (!floor) return answer();
  const refuse = (status: number) => reply(status, '{"success":false}');
  const secret = BEARER.exec(authorization ?? '')?.[1];
  if (secret === undefined) return refuse(401);
  const keyHash = createHash('sha256').update(secret).digest('hex');
  if (post) return floor.create(keyHash, (stored) => (stored ? answer() : refuse(401)));
  floor.read(keyHash, url.slice(url.lastIndexOf('/') + 1), (found) =>
    !found ? refuse(401) : found.id === null ? refuse(404) : answer(),
  );
}

const port = Number(process.env.BARE_PORT);
const listening = () => process.stdout.write('listening\n');

if (process.env.BARE_FRAMEWORK === 'fastify') {
  // The same work served by Fastify as the service uses it, with nothing of the service's own:
  // no hooks, no schemas, no serializer (the bodies are strings), its default JSON body parser.
  const app = Fastify();
  const route = (request: FastifyRequest, reply: FastifyReply) =>
    handle(request.method, request.url, request.headers.authorization, (status, body) => {
      void reply.code(status).header('content-type', JSON_TYPE['content-type']).send(body);
    });
  app.get('/verification/v1/sessions/:id', route);
  app.post('/verification/v1/sessions', route);
  await app.listen({ port, host: '127.0.0.1' });
  listening();
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
} else {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') JSON.parse(Buffer.concat(chunks).toString('utf8'));
      handle(req.method ?? 'GET', req.url ?? '', req.headers.authorization, (status, body) => {
        res.writeHead(status, JSON_TYPE);
        res.end(body);
      });
    });
  });
  server.listen(port, '127.0.0.1', listening);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
