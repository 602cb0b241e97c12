/**
 * Dashboard pages with a large history: server time (in process, app.inject) of each page, p50 and
 * p95, against a session read by API key measured in the same run as the baseline. The issue's
 * target is every page ≤ 100 ms p95 with 1M sessions in the organization's history; lists are
 * cursor pages and the funnel reads its aggregate (a past day is counted on its first view,
 * reported apart as `firstFunnelMs`).
 *
 *   node --import tsx bench/dashboard.ts [--sessions 1000000] [--requests 100] [--database sqlite,postgres] [--json]
 *
 * The database is seeded by bench/scale-seed.ts (set-based SQL: a year of sessions with their
 * events, deliveries and attempts, and the other organizations of that size), every session in
 * the benchmark's organization and application, so that its history is `--sessions` long.
 * PostgreSQL uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a schema of its own, dropped after).
 * Figures are printed, never asserted; `--json` prints one object with each page's p50 and p95.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { TestClock } from '../src/domain/clock.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { acceptInvitation, createOrganizationWithOwner, startDashboardSession } from '../src/services/members.ts';
import { migrate, openStore } from '../src/store/db.ts';
import { analyze, seed, seedPayloads } from './scale-seed.ts';
import { benchDatabase, type BenchDialect } from './support.ts';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1000000' },
    requests: { type: 'string', default: '100' },
    database: { type: 'string', default: 'sqlite,postgres' },
    json: { type: 'boolean', default: false },
  },
});
const SESSIONS = Number(values.sessions);
const REQUESTS = Number(values.requests);
const NOW = new Date('2026-11-20T12:00:00.000Z');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function run(dialect: BenchDialect) {
  const database = await benchDatabase(dialect);
  const store = await openStore(database.url);
  try {
    await migrate(store);
    const clock = new TestClock(NOW);
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      BASE_URL: 'http://localhost:8080',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
      RATE_LIMIT_API_KEY_PER_MINUTE: '0',
    });
    const services = createServiceDeps({ db: store.db, clock, config, pool: store.pgPool });
    const app = await buildApp({ store, services, logger: false });
    const created = await createOrganizationWithOwner(services, {
      name: 'Bench',
      environment: 'sandbox',
      ownerEmail: 'owner@bench.example',
    });
    const member = await acceptInvitation(
      services,
      created.ownerInvitation.url.split('/').pop()!,
      'bench password 123',
    );
    const cookie = `matricula_dashboard=${await startDashboardSession(services, member)}`;
    const appId = created.application.id;
    const seedStart = performance.now();
    await seed(store.db, {
      dialect,
      sessions: SESSIONS,
      now: NOW.getTime(),
      tenant: { orgId: created.organization.id, appId },
      tenantEvery: 1,
      resultRetentionDays: config.resultRetentionDays,
      eventRetentionDays: config.eventRetentionDays,
      ...seedPayloads(NOW.getTime()),
    });
    await analyze(store.db, dialect);
    const seedSeconds = (performance.now() - seedStart) / 1000;
    const aSession = (
      await store.db.selectFrom('sessions').select('id').where('app_id', '=', appId).limit(1).executeTakeFirstOrThrow()
    ).id;

    const anEvent = (
      await store.db.selectFrom('events').select('id').where('app_id', '=', appId).limit(1).executeTakeFirstOrThrow()
    ).id;

    const time = async (url: string, headers: Record<string, string>) => {
      const started = performance.now();
      const res = await app.inject({ method: 'GET', url, headers });
      if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
      return performance.now() - started;
    };
    // The application's counts come from its aggregate (migration 0021), kept through the seed's
    // bulk inserts: they must hold every seeded session, or the figures below measure nothing.
    const details = await app.inject({
      method: 'GET',
      url: `/org/v1/apps/${appId}`,
      headers: { authorization: `Bearer ${created.apiKey.rawSecret}` },
    });
    const counted = details.json().data.metrics.sessions.total;
    if (counted !== SESSIONS) throw new Error(`the application counts ${counted} sessions, not ${SESSIONS}`);
    const firstFunnelMs = await time(`/dashboard/apps/${appId}`, { cookie });
    const pages: Record<string, [string, Record<string, string>]> = {
      'baseline: GET session by key': [
        `/verification/v1/sessions/${aSession}`,
        { authorization: `Bearer ${created.apiKey.rawSecret}` },
      ],
      'apps list': ['/dashboard/apps', { cookie }],
      'app details + funnel': [`/dashboard/apps/${appId}`, { cookie }],
      'sessions list': ['/dashboard/sessions', { cookie }],
      'sessions ?status=completed': ['/dashboard/sessions?status=completed', { cookie }],
      'session details': [`/dashboard/sessions/${aSession}`, { cookie }],
      'events list': ['/dashboard/events', { cookie }],
      'event details': [`/dashboard/events/${anEvent}`, { cookie }],
      'webhook endpoint + delivery log': [`/dashboard/webhooks/whk_${appId.slice(4)}`, { cookie }],
      members: ['/dashboard/members', { cookie }],
      'audit log': ['/dashboard/audit', { cookie }],
    };
    const results: Record<string, { p50: number; p95: number }> = {};
    for (const [name, [url, headers]] of Object.entries(pages)) {
      for (let i = 0; i < 5; i++) await time(url, headers);
      const samples: number[] = [];
      for (let i = 0; i < REQUESTS; i++) samples.push(await time(url, headers));
      samples.sort((a, b) => a - b);
      results[name] = { p50: percentile(samples, 50), p95: percentile(samples, 95) };
    }
    await app.close();
    return { dialect, sessions: SESSIONS, seedSeconds, firstFunnelMs, pages: results };
  } finally {
    await store.close();
    await database.drop();
  }
}

const out = [];
for (const dialect of values.database.split(',') as BenchDialect[]) {
  if (dialect === 'postgres' && !process.env.BENCH_DATABASE_URL && !process.env.TEST_DATABASE_URL) continue;
  const result = await run(dialect);
  out.push(result);
  if (!values.json) {
    console.log(
      `\n${dialect}: ${result.sessions} sessions (seeded in ${result.seedSeconds.toFixed(1)} s), first funnel view ${result.firstFunnelMs.toFixed(1)} ms`,
    );
    for (const [name, r] of Object.entries(result.pages))
      console.log(
        `  ${name.padEnd(32)} p50 ${r.p50.toFixed(2).padStart(8)} ms  p95 ${r.p95.toFixed(2).padStart(8)} ms`,
      );
  }
}
if (values.json) console.log(JSON.stringify({ benchmark: 'dashboard', results: out }));
