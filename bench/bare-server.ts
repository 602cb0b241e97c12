/**
 * The baseline of bench/sessions.ts: a bare node:http server, in a process of its own as the
 * service is, that answers POST with BARE_CREATE_BODY (201) and anything else with BARE_READ_BODY
 * (200). It parses a POST body as JSON, as any server would. Listens on 127.0.0.1:BARE_PORT and
 * prints "listening" once it does. With BARE_WORK_US it first spends that many microseconds of
 * CPU on each request (a busy loop): the calibration of `--calibrate`, what ratio a server that
 * does a known amount of work more than the bare one reaches under the same client.
 *
 * With BARE_SQLITE (a path: the service's own database, while the service runs) it is the floor of
 * `--floor`: before answering a GET it does what no design of the GET can skip while every
 * request must see a revocation at once, and nothing else: the bearer key's SHA-256 and the one
 * read of the key, its application and the session (the service's `key_with_session` statement,
 * the SQL below), on better-sqlite3 with the statement prepared once. It answers the same body.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import Database from 'better-sqlite3';

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
const floor = process.env.BARE_SQLITE ? new Database(process.env.BARE_SQLITE).prepare(KEY_WITH_SESSION) : undefined;
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The floor's read: false when the key is unknown or the session not the key's organization's. */
function readKeyWithSession(req: IncomingMessage): boolean {
  const secret = BEARER.exec(req.headers.authorization ?? '')?.[1];
  if (!floor || secret === undefined) return false;
  const sessionId = (req.url ?? '').slice((req.url ?? '').lastIndexOf('/') + 1);
  const row = floor.get(sessionId, createHash('sha256').update(secret).digest('hex')) as
    { id: string | null } | undefined;
  return row?.id != null;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    work();
    if (floor && req.method === 'GET' && !readKeyWithSession(req)) {
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
      res.end('{"error":{"code":"not_found"}}');
      return;
    }
    if (req.method === 'POST') JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(req.method === 'POST' ? createBody : readBody);
  });
});
server.listen(Number(process.env.BARE_PORT), '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
