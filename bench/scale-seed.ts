/**
 * bench/scale.ts's seed: a database of the service's real schema filled, by set-based SQL, to the
 * shape of a year of use (issue 30): per 300 sessions one organization with two applications, five
 * keys and one webhook endpoint per application; sessions spread over 365 days, the benchmark's
 * tenant holding a tenth of them; per session its events (consent, outcome, and the redaction once
 * RESULT_RETENTION_DAYS has passed), each with one delivered webhook delivery and its attempt.
 * PostgreSQL generates rows with generate_series, SQLite with a recursive CTE, in chunks of one
 * transaction each. Every id is a function of the row's number and time, in the service's id
 * layout (type prefix, 10 characters of time, 16 more), so ids sort by time as the service's do.
 *
 * It writes only columns every version since migration 0011 has, so that the same seed serves the
 * "before" and the "after" of a comparison.
 */
import { execFileSync } from 'node:child_process';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { redactedResult } from '../src/domain/redaction.ts';
import type { SessionResult } from '../src/domain/session.ts';
import { storedResultJson } from '../src/store/sessions.ts';

export const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;
const SESSION_LIFETIME_MS = 15 * 60_000;
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export interface SeedTenant {
  orgId: string;
  appId: string;
}

export interface SeedOptions {
  dialect: 'sqlite' | 'postgres';
  sessions: number;
  now: number;
  tenant: SeedTenant;
  resultRetentionDays: number;
  /** Events older than this are not seeded (the checkout deletes them); undefined: kept forever. */
  eventRetentionDays: number | undefined;
  /** JSON of each event type's data with SESSION_ID where the id goes. */
  eventData: Record<string, string>;
  /** JSON of a completed session's result, and of its redacted form. */
  resultJson: string;
  redactedResultJson: string;
  /** Every how many sessions one is the tenant's (default 10: a tenth; 1: all of them). */
  tenantEvery?: number;
}

/** The event data and results the seed writes, in the service's shapes, as of `now`. */
export function seedPayloads(now: number): Pick<SeedOptions, 'eventData' | 'resultJson' | 'redactedResultJson'> {
  const university = { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' };
  const claims = { is_active_student: true, academic_level: null, valid_until: null };
  const result: SessionResult = {
    verified: true,
    format: 'sd-jwt-vc',
    university,
    claims,
    failureReason: null,
    failureMessage: null,
    protocol: 'matricula',
  };
  return {
    eventData: {
      'consent.approved': '{"sessionId":"SESSION_ID"}',
      'consent.declined': '{"sessionId":"SESSION_ID"}',
      'verification.expired': '{"sessionId":"SESSION_ID"}',
      'verification.cancelled': '{"sessionId":"SESSION_ID"}',
      'verification.completed': JSON.stringify({
        sessionId: 'SESSION_ID',
        verified: true,
        university,
        claims,
        protocol: 'matricula',
      }),
      'verification.redacted': JSON.stringify({ sessionId: 'SESSION_ID', redactedAt: new Date(now).toISOString() }),
    },
    // As the service writes them (store/sessions.ts), redaction's result as domain/redaction.ts makes it.
    resultJson: storedResultJson(result),
    redactedResultJson: storedResultJson(redactedResult(result)),
  };
}

/** The 10 time characters of an id at `ms`, as src/domain/ids.ts writes them. */
export function idTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

const q = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** SQL fragments of one dialect, over integer expressions. */
function fragments(dialect: 'sqlite' | 'postgres') {
  const pg = dialect === 'postgres';
  return {
    /** The 10 time characters of an id, from milliseconds. */
    time: (ms: string) =>
      Array.from(
        { length: 10 },
        (_, k) => `substr('${ALPHABET}', cast(((${ms}) >> ${5 * (9 - k)}) & 31 as integer) + 1, 1)`,
      ).join(' || '),
    /** 16 digits: the row number, zero-padded (digits are in the id alphabet). */
    pad: (n: string) => (pg ? `lpad((${n})::text, 16, '0')` : `printf('%016d', ${n})`),
    iso: (ms: string) =>
      pg
        ? `to_char(to_timestamp((${ms}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
        : `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`,
    hex64: (n: string) => (pg ? `md5((${n})::text) || md5((${n})::text || 'k')` : `lower(hex(randomblob(32)))`),
    numbers: (lo: number, hi: number) =>
      pg
        ? `generate_series(${lo}::bigint, ${hi}::bigint) as g(i)`
        : `(with recursive s(i) as (select ${lo} union all select i + 1 from s where i < ${hi}) select i from s) as g`,
  };
}

/** Runs `body` in chunks of row numbers, each in one transaction. */
async function chunked(db: Kysely<any>, total: number, size: number, body: (lo: number, hi: number) => string[]) {
  for (let lo = 1; lo <= total; lo += size) {
    const hi = Math.min(total, lo + size - 1);
    await db.transaction().execute(async (trx) => {
      for (const statement of body(lo, hi)) await sql.raw(statement).execute(trx);
    });
  }
}

export interface SeedShape {
  organizations: number;
  sessions: number;
}

/** Fills an empty, migrated database (the tenant exists already). */
export async function seed(db: Kysely<any>, o: SeedOptions): Promise<SeedShape> {
  const f = fragments(o.dialect);
  const orgs = Math.max(1, Math.round(o.sessions / 300));
  const step = Math.floor(YEAR_MS / o.sessions);
  const start = o.now - YEAR_MS;
  const createdAt = f.iso(String(start));
  // organizations, applications (2 each), keys (5 each), one endpoint per application.
  await chunked(db, orgs, 50_000, (lo, hi) => [
    `insert into organizations (id, name, created_at)
       select 'org_0000000000' || ${f.pad('i')}, 'Org ' || i, ${createdAt} from ${f.numbers(lo, hi)}`,
    `insert into applications (id, org_id, name, description, environment, status, created_at, updated_at)
       select 'app_0000000000' || ${f.pad('i')}, 'org_0000000000' || ${f.pad('(i + 1) / 2')}, 'App ' || i, null,
              'sandbox', 'active', ${createdAt}, ${createdAt} from ${f.numbers(2 * lo - 1, 2 * hi)}`,
    `insert into api_keys (id, app_id, org_id, name, environment, key_hash, key_hint, created_at)
       select 'key_0000000000' || ${f.pad('i')}, 'app_0000000000' || ${f.pad('(i + 2) / 3')},
              'org_0000000000' || ${f.pad('(i + 5) / 6')}, 'Key ' || i, 'sandbox', ${f.hex64('i')}, 'mk_sb_…' || i,
              ${createdAt} from ${f.numbers(6 * lo - 5, 6 * hi)} where i % 6 <> 0`,
    `insert into webhook_endpoints (id, app_id, org_id, environment, url, description, events, enabled,
              disabled_reason, secret, previous_secret, previous_secret_expires_at, created_at, updated_at)
       select 'whk_0000000000' || ${f.pad('i')}, 'app_0000000000' || ${f.pad('i')},
              'org_0000000000' || ${f.pad('(i + 1) / 2')}, 'sandbox', 'http://127.0.0.1:9/hook', null,
              '["verification.completed","verification.expired","verification.cancelled","verification.redacted","consent.approved","consent.declined"]',
              1, null, 'whsec_' || ${f.pad('i')}, null, null, ${createdAt}, ${createdAt}
         from ${f.numbers(2 * lo - 1, 2 * hi)}`,
  ]);
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: `whk_${o.tenant.appId.slice(4)}`,
      app_id: o.tenant.appId,
      org_id: o.tenant.orgId,
      environment: 'sandbox',
      url: 'http://127.0.0.1:9/hook',
      description: null,
      events: '["verification.completed"]',
      enabled: 1,
      disabled_reason: null,
      secret: 'whsec_tenant',
      previous_secret: null,
      previous_secret_expires_at: null,
      created_at: new Date(start).toISOString(),
      updated_at: new Date(start).toISOString(),
    })
    .execute();

  // Per session number i: its time, owner and outcome, as SQL expressions.
  const created = `(${start} + i * ${step})`;
  const tenantRow = `i % ${o.tenantEvery ?? 10} = 0`;
  const orgNo = `(i % ${orgs}) + 1`;
  const appNo = `((i % ${orgs}) * 2 + 1 + (i / 10) % 2)`;
  const org = `case when ${tenantRow} then ${q(o.tenant.orgId)} else 'org_0000000000' || ${f.pad(orgNo)} end`;
  const app = `case when ${tenantRow} then ${q(o.tenant.appId)} else 'app_0000000000' || ${f.pad(appNo)} end`;
  const roll = `((i * 7919 + i / 10) % 100)`;
  const open = `${created} + ${SESSION_LIFETIME_MS} > ${o.now}`;
  const status = `case when ${open} then (case when i % 2 = 0 then 'pending' else 'consented' end)
    when ${roll} < 60 then 'completed' when ${roll} < 90 then 'expired'
    when ${roll} < 95 then 'declined' else 'cancelled' end`;
  const ended = `case when ${roll} < 60 or ${roll} >= 90 then ${created} + 60000 else ${created} + ${SESSION_LIFETIME_MS} end`;
  const redactedAt = `(${ended} + ${o.resultRetentionDays * DAY_MS} + 60000)`;
  const redacted = `not (${open}) and ${redactedAt} <= ${o.now}`;
  const sessionId = `'sess_' || ${f.time(created)} || ${f.pad('i')}`;
  const eventFloor = o.eventRetentionDays === undefined ? 0 : o.now - o.eventRetentionDays * DAY_MS;

  // The events of session i: [type, time, number offset, condition].
  const completed = `not (${open}) and ${roll} < 60`;
  const events: Array<[string, string, number, string]> = [
    ['consent.approved', `${created} + 30000`, 0, completed],
    ['verification.completed', ended, 1, completed],
    ['verification.expired', ended, 1, `not (${open}) and ${roll} >= 60 and ${roll} < 90`],
    ['consent.declined', ended, 1, `not (${open}) and ${roll} >= 90 and ${roll} < 95`],
    ['verification.cancelled', ended, 1, `not (${open}) and ${roll} >= 95`],
    ['verification.redacted', redactedAt, 2, redacted],
  ];
  const eventSql = (type: string, at: string, offset: number, when: string, lo: number, hi: number) => {
    const [before, after] = o.eventData[type].split('SESSION_ID');
    const n = `(i * 3 + ${offset})`;
    const eventId = `'evt_' || ${f.time(at)} || ${f.pad(n)}`;
    const deliveryId = `'del_' || ${f.time(at)} || ${f.pad(n)}`;
    const endpoint = `case when ${tenantRow} then ${q(`whk_${o.tenant.appId.slice(4)}`)} else 'whk_0000000000' || ${f.pad(appNo)} end`;
    const where = `where ${when} and ${at} >= ${eventFloor} and ${at} <= ${o.now}`;
    const body = `case when ${at} >= ${o.now - o.resultRetentionDays * DAY_MS} then 'ok' else '' end`;
    return [
      `insert into events (id, app_id, org_id, environment, type, data, created_at, session_id)
         select ${eventId}, ${app}, ${org}, 'sandbox', '${type}', ${q(before)} || ${sessionId} || ${q(after)},
                ${f.iso(at)}, ${sessionId} from ${f.numbers(lo, hi)} ${where}`,
      `insert into webhook_deliveries (id, endpoint_id, event_id, event_type, status, due_at, lease_token,
              attempt_count, created_at, updated_at, delivered_at)
         select ${deliveryId}, ${endpoint}, ${eventId}, '${type}', 'succeeded', null, null, 1, ${f.iso(at)},
                ${f.iso(at)}, ${f.iso(at)} from ${f.numbers(lo, hi)} ${where}`,
      `insert into webhook_attempts (id, delivery_id, attempt, worker_id, started_at, duration_ms, status_code,
              outcome, error_message, response_body, response_body_truncated)
         select 'att_' || ${f.time(at)} || ${f.pad(n)}, ${deliveryId}, 1, 'seed', ${f.iso(at)}, 12, 200, 'succeeded',
                null, ${body}, 0 from ${f.numbers(lo, hi)} ${where}`,
    ];
  };
  await chunked(db, o.sessions, 50_000, (lo, hi) => [
    `insert into sessions (id, app_id, org_id, environment, status, challenge_nonce, purpose, required_claims,
            metadata, client_reference, failed_attempts, verified, result, expires_at, created_at, updated_at,
            consented_at, completed_at, redacted_at)
       select ${sessionId}, ${app}, ${org}, 'sandbox', ${status}, 'nonce-' || ${f.pad('i')}, 'Benchmark',
              '["is_active_student"]',
              case when ${redacted} then null else '{"customer":"c-' || i || '"}' end,
              case when ${redacted} then null else 'order-' || i end, 0,
              case when ${completed} then 1 end,
              case when ${completed} then (case when ${redacted} then ${q(o.redactedResultJson)} else ${q(o.resultJson)} end) end,
              ${f.iso(`${created} + ${SESSION_LIFETIME_MS}`)}, ${f.iso(created)},
              ${f.iso(`case when ${open} then ${created} else ${ended} end`)},
              case when ${completed} then ${f.iso(`${created} + 30000`)} end,
              case when ${completed} then ${f.iso(ended)} end,
              case when ${redacted} then ${f.iso(redactedAt)} end
         from ${f.numbers(lo, hi)}`,
    ...events.flatMap(([type, at, offset, when]) => eventSql(type, at, offset, when, lo, hi)),
  ]);
  return { organizations: orgs, sessions: o.sessions };
}

/**
 * Brings the planner's statistics up to date after the bulk load; on PostgreSQL with a VACUUM, as
 * autovacuum does after so many inserts in a database in use (autovacuum_vacuum_insert_threshold):
 * it marks the loaded pages all-visible. Without it the first VACUUM the service runs (the end of
 * a result retention run that redacted something, store/erasure.ts) read every page of the year
 * once, a cost of the seed and not of the service: 603 ms at 1M sessions where the same VACUUM
 * takes 40–60 ms once the pages are marked.
 */
export async function analyze(db: Kysely<any>, dialect: 'sqlite' | 'postgres'): Promise<void> {
  await (dialect === 'postgres' ? sql`vacuum analyze` : sql`analyze`).execute(db);
  await writtenOut(db, dialect);
}

/**
 * Writes the bulk load out to disk before anything is measured: PostgreSQL's CHECKPOINT (else its
 * checkpointer spreads the load's writes over the minutes that follow), SQLite's log copied into
 * the file, then the kernel's dirty pages (`sync`). Left to the background, writing 1–1.5 GB out
 * took this 2-core machine's CPU and disk during the first measurements at 1M sessions: a tenant's
 * list of its 3 keys, whose cost has nothing to do with the size, read 0.91 ms at 1k and 1.45 ms at
 * 1M on PostgreSQL.
 */
async function writtenOut(db: Kysely<any>, dialect: 'sqlite' | 'postgres'): Promise<void> {
  await (dialect === 'postgres' ? sql`checkpoint` : sql`pragma wal_checkpoint(TRUNCATE)`).execute(db);
  execFileSync('sync');
}
