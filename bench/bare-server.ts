/**
 * The baseline of bench/sessions.ts: a bare node:http server, in a process of its own as the
 * service is, that answers POST with BARE_CREATE_BODY (201) and anything else with BARE_READ_BODY
 * (200). It parses a POST body as JSON, as any server would. Listens on 127.0.0.1:BARE_PORT and
 * prints "listening" once it does. With BARE_WORK_US it first spends that many microseconds of
 * CPU on each request (a busy loop): the calibration of `--calibrate`, what ratio a server that
 * does a known amount of work more than the bare one reaches under the same client.
 *
 * With BARE_SQLITE (a path: the service's own database, while the service runs) it is the floor of
 * `--floor`: it does what no design of these routes can skip while every request must see a
 * revocation at once and a created session must be stored before it is answered, and nothing
 * else. A GET: the bearer key's SHA-256 and the one read of the key, its application and the
 * session (the service's `key_with_session` statement, the SQL below). A POST: the body parsed,
 * the key's hash and read, and a session row inserted (a copy of the service's first session with
 * a new nonce and an id made as the service makes them, in time order), committed with the others of the same event-loop turn as the service groups
 * them, before answering. On better-sqlite3, statements prepared once; the same bodies answered.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import Database from 'better-sqlite3';
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
 * What src/store/api-keys.ts `keyWithSession` compiles to on SQLite: the key by its hash, its
 * application, and the session of that id if it belongs to the key's organization.
 */
const KEY_WITH_SESSION = `select "api_keys"."id" as "key_id", "api_keys"."app_id" as "key_app_id",
  "api_keys"."org_id" as "key_org_id", "api_keys"."name" as "key_name",
  "api_keys"."environment" as "key_environment", "api_keys"."key_hint",
  "api_keys"."created_at" as "key_created_at", "applications"."status" as "app_status", "sessions".*
  from "api_keys" inner join "applications" on "applications"."id" = "api_keys"."app_id"
  left join "sessions" on "sessions"."id" = ? and "sessions"."org_id" = "api_keys"."org_id"
  where "api_keys"."key_hash" = ?`;
const BEARER = /^Bearer\s+(\S+)\s*$/i;
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/** The floor's statements over the service's database (BARE_SQLITE). */
function openFloor(path: string) {
  const db = new Database(path);
  const keyWithSession = db.prepare(KEY_WITH_SESSION);
  // Every column of a session the service wrote, to copy into each new row.
  const template = db.prepare('select * from "sessions" order by "id" limit 1').get() as Record<string, unknown>;
  const columns = Object.keys(template);
  const insert = db.prepare(
    `insert into "sessions" (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`,
  );
  const insertAll = db.transaction((rows: Array<Record<string, unknown>>) => {
    for (const row of rows) insert.run(row);
  });
  let queued: Array<{ row: Record<string, unknown>; done: () => void }> = [];
  return {
    /** The key's row (with the session's `id`, or null), or undefined when the key is unknown. */
    read(req: IncomingMessage, sessionId: string): { id: string | null } | undefined {
      const secret = BEARER.exec(req.headers.authorization ?? '')?.[1];
      if (secret === undefined) return undefined;
      const keyHash = createHash('sha256').update(secret).digest('hex');
      return keyWithSession.get(sessionId, keyHash) as { id: string | null } | undefined;
    },
    /** Stores a new session, in one transaction with those queued in the same turn; `done` once committed. */
    insert(done: () => void): void {
      queued.push({
        row: { ...template, id: newId('session'), challenge_nonce: randomBytes(32).toString('base64url') },
        done,
      });
      if (queued.length > 1) return;
      setImmediate(() => {
        const batch = queued;
        queued = [];
        insertAll(batch.map((b) => b.row));
        for (const b of batch) b.done();
      });
    },
  };
}
const floor = process.env.BARE_SQLITE ? openFloor(process.env.BARE_SQLITE) : undefined;

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
    const url = req.url ?? '';
    const found = floor.read(req, post ? '' : url.slice(url.lastIndexOf('/') + 1));
    if (!found || (!post && found.id === null)) {
      res.writeHead(found ? 404 : 401, JSON_TYPE);
      res.end('{"success":false}');
      return;
    }
    if (post) floor.insert(answer);
    else answer();
  });
});
server.listen(Number(process.env.BARE_PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
