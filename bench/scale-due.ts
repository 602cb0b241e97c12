/**
 * bench/scale.ts's database side beyond the seed: the fixed due work of one job interval, the
 * purge burst, and the size on disk.
 */
import { statSync } from 'node:fs';
import { sql, type Kysely } from 'kysely';
import { DAY_MS, idTime } from './scale-seed.ts';
import type { BenchDialect } from './support.ts';

export async function diskBytes(db: Kysely<any>, dialect: BenchDialect, url: string): Promise<number> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ bytes: number }>`
      select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as bytes from pg_class c
      where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r'`.execute(db);
    return Number(rows[0].bytes);
  }
  await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
  const path = url.replace(/^sqlite:/, '');
  return statSync(path).size;
}

/**
 * The fixed due work of one job interval, which does not grow with the size. `round` (0, 1, …)
 * keeps the rows of each round distinct, so that the jobs can be measured over several rounds.
 */
export async function dueWork(
  db: Kysely<any>,
  tenant: { orgId: string; appId: string },
  now: number,
  days: { result: number; event: number },
  round = 0,
) {
  const iso = (ms: number) => new Date(ms).toISOString();
  const id = (prefix: string, n: number) => `${prefix}_zz${String(round * 1000 + n).padStart(24, '0')}`;
  const session = (n: number, createdMs: number) => ({
    id: id('sess', n),
    app_id: tenant.appId,
    org_id: tenant.orgId,
    environment: 'sandbox',
    status: 'pending',
    challenge_nonce: `due-${round}-${n}`,
    purpose: 'Benchmark',
    required_claims: '["is_active_student"]',
    metadata: '{"customer":"due"}',
    client_reference: null,
    failed_attempts: 0,
    verified: null,
    result: null,
    expires_at: iso(createdMs + 15 * 60_000),
    created_at: iso(createdMs),
    updated_at: iso(createdMs),
    consented_at: null,
    completed_at: null,
    redacted_at: null,
  });
  const sessions = [
    ...Array.from({ length: 10 }, (_, n) => session(n, now - 16 * 60_000)),
    ...Array.from({ length: 10 }, (_, n) => ({
      ...session(100 + n, now - days.result * DAY_MS - 3_600_000),
      status: 'expired',
    })),
  ];
  await db.insertInto('sessions').values(sessions).execute();
  const old = now - (days.event + 1) * DAY_MS;
  const events = Array.from({ length: 20 }, (_, n) => `evt_${idTime(old)}${String(round * 100 + n).padStart(16, '0')}`);
  await db
    .insertInto('events')
    .values(
      events.map((e) => ({
        id: e,
        app_id: tenant.appId,
        org_id: tenant.orgId,
        environment: 'sandbox',
        type: 'verification.expired',
        data: '{"sessionId":"sess_old"}',
        created_at: iso(old),
        session_id: 'sess_old',
      })),
    )
    .execute();
  await db
    .insertInto('webhook_deliveries')
    .values(
      events.map((e) => ({
        id: `del_${e.slice(4)}`,
        endpoint_id: `whk_${tenant.appId.slice(4)}`,
        event_id: e,
        event_type: 'verification.expired',
        status: 'succeeded',
        due_at: null,
        lease_token: null,
        attempt_count: 1,
        created_at: iso(old),
        updated_at: iso(old),
        delivered_at: iso(old),
      })),
    )
    .execute();
  await db
    .insertInto('webhook_attempts')
    .values(
      events.map((e) => ({
        id: `att_${e.slice(4)}`,
        delivery_id: `del_${e.slice(4)}`,
        attempt: 1,
        worker_id: 'seed',
        started_at: iso(old),
        duration_ms: 3,
        status_code: 200,
        outcome: 'succeeded',
        error_message: null,
        response_body: 'ok',
        response_body_truncated: 0,
      })),
    )
    .execute();
  await db
    .insertInto('spent_nonces')
    .values(
      Array.from({ length: 50 }, (_, n) => ({
        org_id: tenant.orgId,
        nonce_hash: `due-${round}-${n}`,
        spent_at: iso(now - 3_600_000),
        expires_at: iso(now - 60_000),
      })),
    )
    .execute();
  await db
    .insertInto('idempotency_keys')
    .values(
      Array.from({ length: 50 }, (_, n) => ({
        scope: `bench:${tenant.orgId}`,
        idempotency_key: `due-${round}-${n}`,
        fingerprint: 'x',
        status_code: 200,
        response_body: '{}',
        created_at: iso(now - 25 * 3_600_000),
      })),
    )
    .execute();
}

/** Expired spent nonces written at once, `count` of them, for the purge burst. */
export async function spentNonceBurst(
  db: Kysely<any>,
  dialect: BenchDialect,
  orgId: string,
  count: number,
  now: number,
) {
  const expired = new Date(now - 60_000).toISOString();
  const numbers =
    dialect === 'postgres'
      ? `generate_series(1, ${count}) as g(i)`
      : `(with recursive s(i) as (select 1 union all select i + 1 from s where i < ${count}) select i from s) as g`;
  await sql
    .raw(
      `insert into spent_nonces (org_id, nonce_hash, spent_at, expires_at)
       select '${orgId}', 'burst-' || i, '${expired}', '${expired}' from ${numbers}`,
    )
    .execute(db);
  // The rows were written at once by this connection, not by the service over time: its WAL
  // frames go to the database file now, so that the service's first commit does not copy them.
  if (dialect === 'sqlite') await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db);
}
