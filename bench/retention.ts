/**
 * Result retention: sessions redacted per second by the retention sweep (RESULT_RETENTION_DAYS),
 * against the expiry sweep measured in the same run as the baseline. Both write each session and
 * record one event with its deliveries (expiry in one transaction for the whole sweep, redaction in
 * one per session); redaction also rewrites the session's events, empties its attempts' response
 * bodies and looks through the responses kept for idempotent replays, so the ratio is what
 * redaction costs beyond that. The retention sweep paces its redactions (services/batches.ts): its
 * rate is taken over its work, its pauses timed and left out, and shown with them as well. Beside each rate, the longest the event loop went without a turn
 * during the sweep: how long a request arriving then waited at most in a process that runs it.
 *
 *   node --import tsx bench/retention.ts [--sessions 500] [--background 20000] [--idempotency 2000] [--database sqlite,postgres] [--json]
 *
 * `--background` events (each with one delivery and one attempt) of other sessions and
 * `--idempotency` stored responses of the same organization are there first, as on a server that
 * has been running: lookups that scan instead of using an index show up against them.
 * PostgreSQL uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a schema of its own, dropped after);
 * without either it is skipped. Figures are printed, never asserted.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { TestClock } from '../src/domain/clock.ts';
import { principalScope } from '../src/domain/idempotency.ts';
import type { Principal } from '../src/domain/principal.ts';
import { newId } from '../src/domain/ids.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { REAL_PACING, type Pacing } from '../src/services/batches.ts';
import { expireDueSessions } from '../src/services/expiry.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { applyResultRetention } from '../src/services/redaction.ts';
import { completedEventData, createSession } from '../src/services/sessions.ts';
import { insertNewEndpoint } from '../src/services/webhooks.ts';
import { migrate, openStore, type Store } from '../src/store/db.ts';
import { transitionSession } from '../src/store/session-transitions.ts';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '500' },
    background: { type: 'string', default: '20000' },
    idempotency: { type: 'string', default: '2000' },
    database: { type: 'string', default: 'sqlite,postgres' },
    json: { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const BACKGROUND = Number(values.background);
const IDEMPOTENCY = Number(values.idempotency);
const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const DAY_MS = 86_400_000;
const config = loadConfig({ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'silent', RESULT_RETENTION_DAYS: '30' });

async function openBenchStore(dialect: 'sqlite' | 'postgres'): Promise<{ store: Store; drop(): Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-bench-'));
    const store = await openStore(`sqlite:${join(dir, 'bench.sqlite')}`);
    await migrate(store);
    return {
      store,
      drop: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const store = await openStore(PG_URL!, { schema, poolSize: 5 });
  await migrate(store);
  return {
    store,
    drop: async () => {
      await store.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}

interface Result {
  database: string;
  expiryPerSecond: number;
  /** Sessions redacted per second of the sweep's work: its time without the pauses it leaves to requests. */
  retentionPerSecond: number;
  /** Sessions redacted per second of the sweep's wall time, its pauses included. */
  retentionPacedPerSecond: number;
  /** Redaction's cost per session over expiry's (the baseline), both without pauses. */
  ratio: number;
  /** The longest the event loop went without a turn during each sweep: what a request waited at most. */
  expiryLongestStallMs: number;
  retentionLongestStallMs: number;
}

/**
 * Runs `work` and measures the longest stretch in which the event loop did not turn (a chain of
 * setImmediate callbacks, each noting the time): a request that arrived during it waited that
 * long before its first callback. On SQLite, whose statements complete at once, a loop of
 * transactions with no turn between them is one such stretch, however many transactions it holds.
 */
async function withLongestStall<T>(work: () => Promise<T>): Promise<{ value: T; longestStallMs: number }> {
  let last = performance.now();
  let longest = 0;
  let running = true;
  const turn = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  const value = await work();
  running = false;
  longest = Math.max(longest, performance.now() - last);
  return { value, longestStallMs: longest };
}

async function run(dialect: 'sqlite' | 'postgres'): Promise<Result> {
  const bench = await openBenchStore(dialect);
  const { store } = bench;
  try {
    const clock = new TestClock(new Date('2026-01-01T00:00:00.000Z'));
    const deps = createServiceDeps({ db: store.db, clock, config });
    const org = await createOrganization({ db: store.db, clock }, { name: 'Bench', environment: 'sandbox' });
    const app = org.application;
    const endpoint = await insertNewEndpoint(store.db, { clock }, app, {
      url: 'http://127.0.0.1:9/hooks',
      events: ['verification.completed', 'verification.expired', 'verification.redacted'],
    });
    const principal: Principal = {
      orgId: app.orgId,
      environment: app.environment,
      appId: app.id,
      keyId: org.apiKey.id,
    };

    // A server that has been running: other sessions' events, deliveries and attempts.
    const now = clock.now().toISOString();
    for (let start = 0; start < BACKGROUND; start += 500) {
      const n = Math.min(500, BACKGROUND - start);
      const events = Array.from({ length: n }, () => ({ id: newId('event', clock), session: newId('session', clock) }));
      await store.db
        .insertInto('events')
        .values(
          events.map((e) => ({
            id: e.id,
            app_id: app.id,
            org_id: app.orgId,
            environment: app.environment,
            type: 'verification.completed',
            data: JSON.stringify({ sessionId: e.session, verified: true }),
            created_at: now,
            session_id: e.session,
          })),
        )
        .execute();
      const deliveries = events.map((e) => ({ id: newId('delivery', clock), event: e.id }));
      await store.db
        .insertInto('webhook_deliveries')
        .values(
          deliveries.map((d) => ({
            id: d.id,
            endpoint_id: endpoint.id,
            event_id: d.event,
            event_type: 'verification.completed',
            status: 'succeeded' as const,
            due_at: null,
            lease_token: null,
            attempt_count: 1,
            created_at: now,
            updated_at: now,
            delivered_at: now,
          })),
        )
        .execute();
      await store.db
        .insertInto('webhook_attempts')
        .values(
          deliveries.map((d) => ({
            id: `att_${randomBytes(12).toString('hex')}`,
            delivery_id: d.id,
            attempt: 1,
            worker_id: 'bench',
            started_at: now,
            duration_ms: 1,
            status_code: 200,
            outcome: 'succeeded',
            error_message: null,
            response_body: 'ok',
            response_body_truncated: 0,
          })),
        )
        .execute();
    }

    // Baseline: the expiry sweep over SESSIONS open sessions past their expiry.
    for (let i = 0; i < SESSIONS; i++)
      await createSession(deps, principal, {
        appId: app.id,
        purpose: 'bench',
        requiredClaims: ['is_active_student'],
        expiresInSeconds: 30,
      });
    clock.advance(31_000);
    let started = performance.now();
    const expiry = await withLongestStall(() => expireDueSessions(deps, { batchSize: SESSIONS, maxBatches: 1 }));
    const expiryPerSecond = expiry.value / ((performance.now() - started) / 1000);

    // SESSIONS completed sessions, each with its verification.completed and delivery.
    for (let i = 0; i < SESSIONS; i++) {
      const session = await createSession(deps, principal, {
        appId: app.id,
        purpose: 'bench',
        requiredClaims: ['is_active_student'],
        metadata: { customer: `customer-${i}` },
        clientReference: `order-${i}`,
      });
      const at = clock.now().toISOString();
      const result = {
        verified: true,
        format: 'sd-jwt-vc' as const,
        university: { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' },
        claims: { is_active_student: true, academic_level: null, valid_until: null },
        failureReason: null,
        failureMessage: null,
        protocol: 'matricula' as const,
      };
      await deps.unitOfWork(async (work) => {
        await transitionSession(work.db, session.id, { to: 'consented', at, requireUnexpired: true });
        await transitionSession(work.db, session.id, { to: 'completed', at, requireUnexpired: true, result });
        await work.record(session, 'verification.completed', completedEventData(session.id, result));
      });
    }

    // Stored responses of the organization from the last day before the sweep.
    clock.advance(30 * DAY_MS + 3_600_000);
    const scope = principalScope(app.orgId, app.environment);
    for (let start = 0; start < IDEMPOTENCY; start += 500) {
      const n = Math.min(500, IDEMPOTENCY - start);
      await store.db
        .insertInto('idempotency_keys')
        .values(
          Array.from({ length: n }, (_, i) => ({
            scope,
            idempotency_key: `bench-${start + i}`,
            fingerprint: 'x',
            status_code: 200,
            response_body: JSON.stringify({ success: true, data: { sessionId: newId('session', clock) } }),
            created_at: new Date(clock.now().getTime() - ((start + i) % 1440) * 60_000).toISOString(),
          })),
        )
        .execute();
    }

    // Each redaction is paced (a pause of nine times its length after it, services/batches.ts):
    // the pauses are timed, so that the rate compared with expiry's is the sweep's work.
    let pausedMs = 0;
    const pacing: Pacing = {
      ...REAL_PACING,
      pause: async (ms, signal) => {
        const from = performance.now();
        await REAL_PACING.pause(ms, signal);
        pausedMs += performance.now() - from;
      },
    };
    started = performance.now();
    const retention = await withLongestStall(() =>
      applyResultRetention(deps, { batchSize: 100, maxBatches: 1_000_000, pacing }),
    );
    const redacted = retention.value.sessions;
    const wallMs = performance.now() - started;
    const retentionPerSecond = redacted / ((wallMs - pausedMs) / 1000);
    const retentionPacedPerSecond = redacted / (wallMs / 1000);
    if (redacted !== 2 * SESSIONS) throw new Error(`redacted ${redacted}, expected ${2 * SESSIONS}`);
    return {
      database: dialect,
      expiryPerSecond,
      retentionPerSecond,
      retentionPacedPerSecond,
      ratio: expiryPerSecond / retentionPerSecond,
      expiryLongestStallMs: expiry.longestStallMs,
      retentionLongestStallMs: retention.longestStallMs,
    };
  } finally {
    await bench.drop();
  }
}

async function main(): Promise<void> {
  const dialects = values.database.split(',').map((d) => d.trim()) as Array<'sqlite' | 'postgres'>;
  console.log(
    `result retention, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ${SESSIONS} sessions per sweep, ${BACKGROUND} other events, ${IDEMPOTENCY} stored responses\n`,
  );
  console.log(
    '| database | expiry sweep sessions/s (baseline) | retention sweep sessions/s | time per session vs baseline |' +
      ' retention sweep sessions/s, its pauses included | longest stall, expiry / retention (ms) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  const results: Result[] = [];
  for (const dialect of dialects) {
    if (dialect === 'postgres' && !PG_URL) {
      console.log('| postgres | skipped: set BENCH_DATABASE_URL or TEST_DATABASE_URL | | | | |');
      continue;
    }
    const r = await run(dialect);
    results.push(r);
    console.log(
      `| ${r.database} | ${r.expiryPerSecond.toFixed(0)} | ${r.retentionPerSecond.toFixed(0)} | ${r.ratio.toFixed(2)}× | ` +
        `${r.retentionPacedPerSecond.toFixed(0)} | ` +
        `${r.expiryLongestStallMs.toFixed(1)} / ${r.retentionLongestStallMs.toFixed(1)} |`,
    );
  }
  if (values.json)
    console.log(
      JSON.stringify({
        bench: 'retention',
        sessions: SESSIONS,
        background: BACKGROUND,
        idempotency: IDEMPOTENCY,
        results,
      }),
    );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
