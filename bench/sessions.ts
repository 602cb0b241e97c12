/**
 * Session API throughput on loopback, beside a bare node:http server answering the same JSON in
 * the same run: create-session (POST) and get-session (GET).
 *
 *   node --import tsx bench/sessions.ts [--requests 3000] [--concurrency 16] [--database sqlite|postgres]
 *
 * PostgreSQL uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a schema of its own, dropped after).
 * Figures are printed, never asserted: the machine is shared and noisy; the ratio to the bare
 * server measured in the same run is the number to watch.
 */
import { createServer, type Server } from 'node:http';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildApp } from '../src/app.ts';
import { systemClock } from '../src/domain/clock.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { createTestStore, testConfig } from '../test/support/harness.ts';
import { freePort } from '../test/support/server.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '16' },
    database: { type: 'string', default: 'sqlite' },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const dialect = values.database === 'postgres' ? 'postgres' : 'sqlite';
if (dialect === 'postgres') process.env.TEST_DATABASE_URL ??= process.env.BENCH_DATABASE_URL;

interface Result {
  label: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Sends `count` requests with `concurrency` in flight; every request is built by `make(i)`. */
async function load(
  label: string,
  origin: string,
  count: number,
  make: (i: number) => { method: 'GET' | 'POST'; path: string; body?: string },
  headers: Record<string, string>,
): Promise<Result> {
  const pool = new Pool(origin, { connections: CONCURRENCY, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        const req = make(i);
        const t0 = performance.now();
        const res = await pool.request({
          method: req.method,
          path: req.path,
          body: req.body,
          headers: req.body ? { ...headers, 'content-type': 'application/json' } : headers,
        });
        await res.body.text();
        latencies.push(performance.now() - t0);
        if (res.statusCode >= 300) errors++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return { label, rps: count / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), errors };
}

async function main(): Promise<void> {
  const db = await createTestStore(dialect);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const app = await buildApp({
    store: db.store,
    clock: systemClock,
    config: testConfig({ BASE_URL: origin, LOG_LEVEL: 'silent' }),
    logger: false,
  });
  await app.listen({ port, host: '127.0.0.1' });
  const org = await createOrganization(
    { db: db.store.db, clock: systemClock },
    { name: 'Bench', environment: 'sandbox' },
  );
  const headers = { authorization: `Bearer ${org.apiKey.rawSecret}` };
  const createBody = JSON.stringify({
    appId: org.application.id,
    purpose: 'Benchmark',
    requiredClaims: ['is_active_student', 'university_domain'],
  });

  // Bodies the bare server answers with: exactly what Matricula answered.
  const sample = await fetch(`${origin}/verification/v1/sessions`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: createBody,
  });
  const createdJson = await sample.text();
  const sessionId = JSON.parse(createdJson).data.sessionId as string;
  const readJson = await (await fetch(`${origin}/verification/v1/sessions/${sessionId}`, { headers })).text();
  const barePort = await freePort();
  const bare: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(req.method === 'POST' ? createdJson : readJson);
    });
  });
  await new Promise<void>((resolve) => bare.listen(barePort, '127.0.0.1', resolve));
  const bareOrigin = `http://127.0.0.1:${barePort}`;

  const create = () => ({ method: 'POST' as const, path: '/verification/v1/sessions', body: createBody });
  const read = () => ({ method: 'GET' as const, path: `/verification/v1/sessions/${sessionId}` });

  // Warm-up, then alternate the two servers so that noise on the machine hits both alike.
  await load('warmup', origin, 300, create, headers);
  await load('warmup', bareOrigin, 300, create, headers);
  const results: Array<[Result, Result]> = [];
  for (const [name, make] of [
    ['create session', create],
    ['get session', read],
  ] as const) {
    const ours = await load(`matricula ${name}`, origin, REQUESTS, make, headers);
    const baseline = await load(`bare node:http ${name}`, bareOrigin, REQUESTS, make, headers);
    results.push([ours, baseline]);
  }

  console.log(
    `\nbench/sessions.ts  database=${dialect}  requests=${REQUESTS}  concurrency=${CONCURRENCY}  node=${process.version}\n`,
  );
  console.log('operation                         req/s     p50 ms   p99 ms   errors');
  for (const [ours, baseline] of results) {
    for (const r of [ours, baseline])
      console.log(
        `${r.label.padEnd(30)} ${r.rps.toFixed(0).padStart(8)} ${r.p50.toFixed(2).padStart(9)} ${r.p99.toFixed(2).padStart(8)} ${String(r.errors).padStart(8)}`,
      );
    console.log(
      `  ratio matricula / bare: throughput ${(ours.rps / baseline.rps).toFixed(2)}, p99 ${(ours.p99 / baseline.p99).toFixed(1)}x\n`,
    );
  }
  await app.close();
  await new Promise((resolve) => bare.close(resolve));
  await db.drop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
