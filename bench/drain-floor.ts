/**
 * The floor of bench/webhooks.ts's drain: what no design of durable, signed, at-least-once
 * delivery can skip, and nothing else, on the service's own database and schema, in the bench's
 * process (as the worker is), to the same receiver, 16 POSTs in flight (as the baseline sends and
 * as the worker sends to one endpoint).
 *
 * Per delivery: taken under a lease before it is sent (a crashed sender's delivery must be found
 * again, and two senders must not both take it), its event and endpoint read, the body built and
 * signed twice (`X-Service-Signature` and Standard Webhooks, each an HMAC-SHA256), the POST with
 * the spec's headers, and once answered the delivery marked done and its attempt written (the API
 * lists attempts) before it counts. Batched as well as a design can: a claim takes 16 due rows in
 * one statement (PostgreSQL: one statement with the reads, SKIP LOCKED; SQLite: the update and the
 * read in one transaction), a second claim is under way while the first batch is sent (the
 * worker's claim-ahead), and the answers that arrive while a recording is under way are recorded
 * together by the next (one statement on PostgreSQL, one transaction on SQLite). No fairness
 * across endpoints, no per-endpoint caps, no heartbeat, no timeout timer, no retry schedule, no
 * response body kept: the worker's policy the floor leaves out, so that `drain_vs_floor` is what
 * that policy and the worker's own code cost. Prepared statements on the drivers themselves
 * (better-sqlite3; named statements on pg), no query builder.
 */
import { createHmac, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Agent, request } from 'undici';
import { systemClock } from '../src/domain/clock.ts';
import { newId } from '../src/domain/ids.ts';

export interface FloorTarget {
  /** SQLite: the database file the service's store writes. */
  sqlitePath?: string;
  /** PostgreSQL: a connection string whose search_path is the bench's schema. */
  pgUrl?: string;
}

interface Claimed {
  id: string;
  attempt_count: number;
  lease_token: string;
  url: string;
  secret: string;
  event_id: string;
  type: string;
  created_at: string;
  app_id: string;
  environment: string;
  data: string;
}

interface Done {
  delivery: Claimed;
  attemptId: string;
  startedAt: string;
  durationMs: number;
  status: number;
}

/** What the floor's storage does: claim a batch under a lease, record finished ones. */
interface FloorStorage {
  claim(limit: number): Promise<Claimed[]>;
  record(done: Done[]): Promise<void>;
  close(): Promise<void>;
}

const IN_FLIGHT = 16;
const BATCH = 16;
const LEASE_MS = 30_000;
const WORKER_ID = 'floor';

const CLAIM_COLUMNS = `d.id, d.attempt_count, d.lease_token, e.url, e.secret, ev.id as event_id, ev.type,
  ev.created_at, ev.app_id, ev.environment, ev.data`;

function sqliteStorage(path: string): FloorStorage {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  const take = db.prepare(`update webhook_deliveries set status = 'sending', lease_token = @token,
    due_at = @lease, attempt_count = attempt_count + 1, updated_at = @now
    where id in (select id from webhook_deliveries where due_at is not null and due_at <= @now
      and status = 'pending' order by due_at limit @limit) returning id`);
  const read = db.prepare(`select ${CLAIM_COLUMNS} from webhook_deliveries as d
    join webhook_endpoints as e on e.id = d.endpoint_id join events as ev on ev.id = d.event_id
    where d.id in (select value from json_each(?))`);
  const claim = db.transaction((p: { token: string; lease: string; now: string; limit: number }) => {
    const ids = (take.all(p) as Array<{ id: string }>).map((row) => row.id);
    return ids.length === 0 ? [] : (read.all(JSON.stringify(ids)) as Claimed[]);
  });
  const markDone = db.prepare(`update webhook_deliveries set status = 'succeeded', due_at = null,
    lease_token = null, delivered_at = @now, updated_at = @now where id = @id and lease_token = @token`);
  const insertAttempt = db.prepare(`insert into webhook_attempts (id, delivery_id, attempt, worker_id,
    started_at, duration_ms, status_code, outcome, error_message, response_body, response_body_truncated)
    values (@id, @delivery_id, @attempt, @worker_id, @started_at, @duration_ms, @status_code, 'succeeded', null, '', 0)`);
  const record = db.transaction((done: Done[], now: string) => {
    for (const d of done) {
      markDone.run({ now, id: d.delivery.id, token: d.delivery.lease_token });
      insertAttempt.run({
        id: d.attemptId,
        delivery_id: d.delivery.id,
        attempt: d.delivery.attempt_count,
        worker_id: WORKER_ID,
        started_at: d.startedAt,
        duration_ms: d.durationMs,
        status_code: d.status,
      });
    }
  });
  return {
    claim: async (limit) => {
      const now = new Date();
      return claim({
        token: randomBytes(12).toString('base64url'),
        lease: new Date(now.getTime() + LEASE_MS).toISOString(),
        now: now.toISOString(),
        limit,
      });
    },
    record: async (done) => record(done, new Date().toISOString()),
    close: async () => void db.close(),
  };
}

function postgresStorage(url: string): FloorStorage {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const claimText = `with c as (
      update webhook_deliveries set status = 'sending', lease_token = $1, due_at = $2,
        attempt_count = attempt_count + 1, updated_at = $3
      where id in (select id from webhook_deliveries where due_at <= $3 and status = 'pending'
        order by due_at limit $4 for update skip locked)
      returning id, attempt_count, lease_token, endpoint_id, event_id)
    select ${CLAIM_COLUMNS} from c as d join webhook_endpoints as e on e.id = d.endpoint_id
      join events as ev on ev.id = d.event_id`;
  const recordText = `with done as (
      update webhook_deliveries as d set status = 'succeeded', due_at = null, lease_token = null,
        delivered_at = $1, updated_at = $1
      from unnest($2::text[], $3::text[]) as r(id, token)
      where d.id = r.id and d.lease_token = r.token returning d.id)
    insert into webhook_attempts (id, delivery_id, attempt, worker_id, started_at, duration_ms,
      status_code, outcome, error_message, response_body, response_body_truncated)
    select a.id, a.delivery_id, a.attempt, '${WORKER_ID}', a.started_at, a.duration_ms, a.status_code,
      'succeeded', null, '', 0
    from unnest($4::text[], $2::text[], $5::int[], $6::text[], $7::int[], $8::int[])
      as a(id, delivery_id, attempt, started_at, duration_ms, status_code)`;
  return {
    claim: async (limit) => {
      const now = new Date();
      const token = randomBytes(12).toString('base64url');
      const lease = new Date(now.getTime() + LEASE_MS).toISOString();
      const result = await pool.query<Claimed>({
        name: 'floor_claim',
        text: claimText,
        values: [token, lease, now.toISOString(), limit],
      });
      return result.rows;
    },
    record: async (done) => {
      await pool.query({
        name: 'floor_record',
        text: recordText,
        values: [
          new Date().toISOString(),
          done.map((d) => d.delivery.id),
          done.map((d) => d.delivery.lease_token),
          done.map((d) => d.attemptId),
          done.map((d) => d.delivery.attempt_count),
          done.map((d) => d.startedAt),
          done.map((d) => d.durationMs),
          done.map((d) => d.status),
        ],
      });
    },
    close: () => pool.end(),
  };
}

/** The body and the spec's nine headers of a claimed delivery, signed with its endpoint's secret. */
function signed(d: Claimed, now: Date): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    id: d.event_id,
    event: d.type,
    createdAt: d.created_at,
    appId: d.app_id,
    environment: d.environment,
    data: JSON.parse(d.data) as unknown,
  });
  const t = Math.floor(now.getTime() / 1000);
  const service = createHmac('sha256', d.secret).update(`${t}.${body}`).digest('hex');
  const standardKey = Buffer.from(d.secret.slice('whsec_'.length), 'base64');
  const standard = createHmac('sha256', standardKey).update(`${d.event_id}.${t}.${body}`).digest('base64');
  return {
    body,
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': 'Service-Webhooks/1.0',
      'X-Service-Signature': `t=${t},v1=${service}`,
      'X-Service-Event': d.type,
      'X-Service-Delivery': d.id,
      'X-Service-Delivery-Attempt': String(d.attempt_count),
      'webhook-id': d.event_id,
      'webhook-timestamp': String(t),
      'webhook-signature': `v1,${standard}`,
    },
  };
}

/**
 * Drains the `count` pending deliveries of the target's database as the floor does (above), to
 * the URLs their endpoints name. Resolves once every one is recorded, with how many were recorded
 * (the caller times it by its receiver).
 */
export async function drainFloor(target: FloorTarget, count: number): Promise<{ recorded: number }> {
  const storage = target.sqlitePath ? sqliteStorage(target.sqlitePath) : postgresStorage(target.pgUrl!);
  const agent = new Agent();
  const queue: Claimed[] = [];
  const finished: Done[] = [];
  let recorded = 0;
  let sending = 0;
  let claiming: Promise<void> | undefined;
  let recording: Promise<void> | undefined;
  let exhausted = false;
  let settle!: () => void;
  let fail!: (err: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });

  // Claim ahead: a batch under way whenever fewer than a batch wait beside the sends.
  const refill = () => {
    if (claiming || exhausted || queue.length >= BATCH) return;
    claiming = storage.claim(BATCH).then((batch) => {
      claiming = undefined;
      if (batch.length === 0) exhausted = true;
      queue.push(...batch);
      pump();
    }, fail);
  };
  // Group recording: the answers of one turn of the event loop, and those that arrive while a
  // recording is under way, go in one recording (SQLite's is synchronous: without the turn each
  // answer would be a commit of its own).
  let flushing = false;
  const flush = () => {
    if (flushing) return;
    flushing = true;
    setImmediate(() => {
      flushing = false;
      if (recording || finished.length === 0) return;
      const batch = finished.splice(0);
      recording = storage.record(batch).then(() => {
        recording = undefined;
        recorded += batch.length;
        if (recorded >= count) settle();
        else flush();
      }, fail);
    });
  };
  const send = async (d: Claimed) => {
    const now = new Date();
    const { body, headers } = signed(d, now);
    const response = await request(d.url, { method: 'POST', headers, body, dispatcher: agent });
    await response.body.text();
    finished.push({
      delivery: d,
      attemptId: newId('attempt', systemClock),
      startedAt: now.toISOString(),
      durationMs: Date.now() - now.getTime(),
      status: response.statusCode,
    });
    flush();
  };
  const pump = () => {
    while (sending < IN_FLIGHT && queue.length > 0) {
      const d = queue.shift()!;
      sending++;
      send(d).then(() => {
        sending--;
        pump();
      }, fail);
    }
    refill();
  };
  pump();
  try {
    await done;
  } finally {
    await claiming;
    await recording;
    await agent.close();
    await storage.close();
  }
  return { recorded };
}
