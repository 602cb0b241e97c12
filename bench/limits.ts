/**
 * Abuse limits and the proof pool, measured (issues 10 and 13):
 *
 *   (a) flood: an unauthenticated client floods POST /wallet/sandbox/presentation (BBS) while
 *       another tenant sends authenticated GET /org/v1/apps one after the other: the tenant's
 *       p50/p99 at rest and beside the flood, and what the flood got (200 / 429);
 *   (b) verify: GET /verification/v1/sessions/{id} one after the other, at rest and while other
 *       clients verify BBS and Groth16 presentations (POST /verification/v1/verify) at full speed;
 *   (c) junk: one address floods a session's public routes with junk (consent with a wrong nonce,
 *       issue 24: counted against the address, refused beyond its budget) beside the same tenant.
 *
 * Each configuration is a server in a child process of its own (so the load generators here do
 * not share its event loop), started with config switches: proofs on the event loop
 * (PROOF_WORKERS=0) without limits — the baseline —, the worker pool without limits, and the pool
 * with the default limits. All in one run, on one machine state.
 *
 *   node --import tsx bench/limits.ts [--seconds 6] [--flood 16] [--json]
 *
 * Figures are printed, never asserted: the machine is shared and noisy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startBare } from './support.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    flood: { type: 'string', default: '16' },
    json: { type: 'boolean', default: false },
    serve: { type: 'boolean', default: false },
  },
});
const SECONDS = Number(values.seconds);
const FLOOD = Number(values.flood);

/** What the server child reports once it listens. */
interface Served {
  origin: string;
  auth: string;
  /** Sandbox sessions the flood builds presentations for (id and nonce, from any portal page). */
  sessions: Array<{ sessionId: string; nonce: string }>;
  /** A session the tenant reads. */
  readSessionId: string;
  /** Presentations bound to `verifyNonce` and the server's audience. */
  verifyNonce: string;
  bbs: unknown;
  groth16: unknown;
}

// ---------------------------------------------------------------------------------------------
// The server child.

async function serve(): Promise<void> {
  const { systemClock } = await import('../src/domain/clock.ts');
  const { createOrganization } = await import('../src/services/organizations.ts');
  const { seedSandboxIssuers } = await import('../src/services/trust-registry.ts');
  const { buildTestApp, createTestStore, testConfig } = await import('../test/support/harness.ts');
  // Reserved before the app is built (BASE_URL names it), as the figures in bench/README.md were measured.
  const { unusedPort: freePort } = await import('../test/support/server.ts');
  const { bbsBuilder } = await import('../src/proofs/bbs/builder.ts');
  const { groth16Builder, releaseSnarkjsCurve } = await import('../src/proofs/groth16/builder.ts');

  const overrides = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as Record<string, string>;
  const db = await createTestStore('sqlite');
  await seedSandboxIssuers(db.store.db, systemClock);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const { app } = await buildTestApp(
    db.store,
    systemClock,
    testConfig({ BASE_URL: origin, LOG_LEVEL: 'silent', ...overrides }),
  );
  await app.listen({ port, host: '127.0.0.1' });
  const org = await createOrganization(
    { db: db.store.db, clock: systemClock },
    { name: 'Bench', environment: 'sandbox' },
  );
  const auth = `Bearer ${org.apiKey.rawSecret}`;
  const createSession = async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/verification/v1/sessions',
      headers: { authorization: auth },
      payload: { appId: org.application.id, purpose: 'Bench', requiredClaims: ['is_active_student'] },
    });
    const data = res.json().data as { sessionId: string; challengeNonce: string };
    return { sessionId: data.sessionId, nonce: data.challengeNonce };
  };
  const sessions = await Promise.all(Array.from({ length: 32 }, createSession));
  const student = {
    university: 'sandbox-state.example',
    active: true,
    academicLevel: 'undergraduate',
    validUntil: '2030-01-01T00:00:00.000Z',
    holderSeed: 'bench',
  };
  const verifyNonce = 'nonce_bench';
  const request = { nonce: verifyNonce, audience: origin, now: new Date(), disclose: ['is_active_student' as const] };
  const served: Served = {
    origin,
    auth,
    sessions,
    readSessionId: sessions[0].sessionId,
    verifyNonce,
    bbs: await bbsBuilder.present(student, request),
    groth16: await groth16Builder.present(student, request),
  };
  await releaseSnarkjsCurve();
  // Warm-up, outside the measurements: the worker threads load the libraries and prepare the
  // Groth16 key on their first task.
  for (let i = 0; i < 4; i++) {
    const s = sessions[sessions.length - 1 - i];
    await app.inject({
      method: 'POST',
      url: '/wallet/sandbox/presentation',
      payload: {
        sessionId: s.sessionId,
        nonce: s.nonce,
        format: 'bbs',
        student: { university: student.university, active: true, academicLevel: 'undergraduate', expired: false },
      },
    });
    for (const format of ['bbs', 'groth16'] as const)
      await app.inject({
        method: 'POST',
        url: '/verification/v1/verify',
        headers: { authorization: auth },
        payload: { format, presentation: served[format], nonce: `${verifyNonce}-unbound` },
      });
  }
  process.stdout.write(`READY ${JSON.stringify(served)}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    void app.close().then(() => db.drop().then(() => process.exit(0)));
  });
}

// ---------------------------------------------------------------------------------------------
// The load generators.

async function startServer(config: Record<string, string>): Promise<{ child: ChildProcess; served: Served }> {
  const child = spawn(process.execPath, [...process.execArgv, new URL(import.meta.url).pathname, '--serve'], {
    env: { ...process.env, BENCH_CONFIG: JSON.stringify(config) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    if (line.startsWith('READY ')) return { child, served: JSON.parse(line.slice(6)) as Served };
  }
  throw new Error('the server child exited before it was ready');
}

async function stopServer(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.stdin?.end();
  await exited;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

interface Latency {
  n: number;
  p50: number;
  p99: number;
  errors: number;
}

/** One request after the other for `seconds`: a tenant's view of the service. */
async function sequential(origin: string, path: string, auth: string, seconds: number): Promise<Latency> {
  const pool = new Pool(origin, { connections: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const t0 = performance.now();
    const res = await pool.request({ method: 'GET', path, headers: { authorization: auth } });
    await res.body.text();
    latencies.push(performance.now() - t0);
    if (res.statusCode !== 200) errors++;
  }
  await pool.close();
  latencies.sort((a, b) => a - b);
  return { n: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), errors };
}

/** `concurrency` loops POSTing `body(i)` until `stop` resolves; counts answers by status. */
function hammer(
  origin: string,
  concurrency: number,
  request: (i: number) => { path: string; body: string; headers?: Record<string, string> },
): { stop: () => Promise<Record<string, number>> } {
  const pool = new Pool(origin, { connections: concurrency });
  const counts: Record<string, number> = {};
  let running = true;
  let i = 0;
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      const r = request(i++);
      try {
        const res = await pool.request({
          method: 'POST',
          path: r.path,
          body: r.body,
          headers: { 'content-type': 'application/json', ...r.headers },
        });
        await res.body.text();
        counts[res.statusCode] = (counts[res.statusCode] ?? 0) + 1;
      } catch {
        counts.error = (counts.error ?? 0) + 1;
      }
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      await pool.close();
      return counts;
    },
  };
}

interface FloodResult {
  rest: Latency;
  flood: Latency;
  attacker: Record<string, number>;
}

async function floodScenario(served: Served): Promise<FloodResult> {
  const tenantPath = '/org/v1/apps';
  const rest = await sequential(served.origin, tenantPath, served.auth, SECONDS);
  // Unauthenticated: the session id and nonce are all it needs (any sandbox portal page has them).
  const attacker = hammer(served.origin, FLOOD, (i) => {
    const s = served.sessions[i % served.sessions.length];
    return {
      path: '/wallet/sandbox/presentation',
      body: JSON.stringify({
        sessionId: s.sessionId,
        nonce: s.nonce,
        format: 'bbs',
        student: { university: 'sandbox-state.example', active: true, academicLevel: 'undergraduate', expired: false },
      }),
    };
  });
  const flood = await sequential(served.origin, tenantPath, served.auth, SECONDS);
  return { rest, flood, attacker: await attacker.stop() };
}

/** Consent with a wrong nonce for real sessions: what a flood that guesses sends. */
async function junkScenario(served: Served): Promise<FloodResult> {
  const tenantPath = '/org/v1/apps';
  const rest = await sequential(served.origin, tenantPath, served.auth, SECONDS);
  const attacker = hammer(served.origin, FLOOD, (i) => ({
    path: `/verification/v1/sessions/${served.sessions[i % served.sessions.length].sessionId}/consent`,
    body: JSON.stringify({ nonce: `nonce_guess_${i}`, decision: 'approved' }),
  }));
  const flood = await sequential(served.origin, tenantPath, served.auth, SECONDS);
  return { rest, flood, attacker: await attacker.stop() };
}

interface VerifyResult {
  rest: Latency;
  busy: Latency;
  verifications: Record<string, number>;
  verificationsPerSecond: number;
}

async function verifyScenario(served: Served): Promise<VerifyResult> {
  const readPath = `/verification/v1/sessions/${served.readSessionId}`;
  const rest = await sequential(served.origin, readPath, served.auth, SECONDS);
  // Four clients, alternating BBS and Groth16, as fast as the service answers them.
  const verifier = hammer(served.origin, 4, (i) => ({
    path: '/verification/v1/verify',
    headers: { authorization: served.auth },
    body: JSON.stringify({
      format: i % 2 === 0 ? 'bbs' : 'groth16',
      presentation: i % 2 === 0 ? served.bbs : served.groth16,
      // /verify spends a nonce once (issue 10, finding 2): a replay would stop before the pairing.
      // A nonce the proof is not bound to costs the full pairing, is refused and spends nothing.
      nonce: `${served.verifyNonce}-unbound`,
    }),
  }));
  const started = performance.now();
  const busy = await sequential(served.origin, readPath, served.auth, SECONDS);
  const verifications = await verifier.stop();
  const total = Object.values(verifications).reduce((a, b) => a + b, 0);
  return { rest, busy, verifications, verificationsPerSecond: total / ((performance.now() - started) / 1000) };
}

// The service's default thread count. Named explicitly: the test harness the server child builds
// on runs proofs on the calling thread unless told otherwise (test/support/harness.ts).
const POOL_THREADS = String(Math.max(1, availableParallelism() - 1));

/** What the junk scenario needs of a server, for the bare one: any paths do, it answers them all alike. */
const FLOOR_SERVED: Served = {
  origin: '',
  auth: 'Bearer floor',
  sessions: [{ sessionId: 'sess_floor', nonce: 'nonce_floor' }],
  readSessionId: 'sess_floor',
  verifyNonce: 'nonce_floor',
  bbs: null,
  groth16: null,
};

const CONFIGS = {
  event_loop: { label: 'event loop, no limits (baseline)', env: rateLimitsOff({ PROOF_WORKERS: '0' }) },
  pool: { label: 'worker pool, no limits', env: rateLimitsOff({ PROOF_WORKERS: POOL_THREADS }) },
  pool_limits: {
    label: 'worker pool + default limits',
    // The tenant's own key limit out of the way: the benchmark measures what the flood costs it.
    env: {
      PROOF_WORKERS: POOL_THREADS,
      RATE_LIMIT_PUBLIC_PER_MINUTE: '300',
      RATE_LIMIT_HEAVY_PER_MINUTE: '30',
      RATE_LIMIT_SESSION_PER_MINUTE: '60',
      RATE_LIMIT_API_KEY_PER_MINUTE: '0',
    },
  },
} as const;

function rateLimitsOff(env: Record<string, string>): Record<string, string> {
  return {
    ...env,
    RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
    RATE_LIMIT_HEAVY_PER_MINUTE: '0',
    RATE_LIMIT_SESSION_PER_MINUTE: '0',
    RATE_LIMIT_API_KEY_PER_MINUTE: '0',
  };
}

const fmt = (ms: number) => (Number.isNaN(ms) ? '   -' : ms.toFixed(1).padStart(7));
const counts = (c: Record<string, number>) =>
  Object.entries(c)
    .map(([status, n]) => `${status}:${n}`)
    .join(' ');

async function main(): Promise<void> {
  const flood: Partial<Record<keyof typeof CONFIGS, FloodResult>> = {};
  const verify: Partial<Record<keyof typeof CONFIGS, VerifyResult>> = {};
  const junk: Partial<Record<keyof typeof CONFIGS, FloodResult>> = {};
  let junkFloor: FloodResult | undefined;
  for (const [name, config] of Object.entries(CONFIGS) as Array<
    [keyof typeof CONFIGS, (typeof CONFIGS)[keyof typeof CONFIGS]]
  >) {
    const { child, served } = await startServer(config.env);
    try {
      // Verify first: the Groth16 presentation's `now` must be within a minute of the server's clock.
      if (name !== 'pool_limits') verify[name] = await verifyScenario(served);
      flood[name] = await floodScenario(served);
      if (name !== 'event_loop') junk[name] = await junkScenario(served);
    } finally {
      await stopServer(child);
    }
  }
  // The floor of (c): the same flood and tenant against a bare node:http server in a process of its
  // own (bench/bare-server.ts), which answers every request at once with a fixed body. No server that
  // reads the requests can slow the tenant less beside this flood on this machine.
  const bare = await startBare(JSON.stringify({ success: false }), JSON.stringify({ success: true, data: [] }));
  try {
    junkFloor = await junkScenario({ ...FLOOR_SERVED, origin: bare.origin });
  } finally {
    await bare.stop();
  }

  console.log(`\nbench/limits.ts  seconds=${SECONDS} per phase  flood=${FLOOD} concurrent  node=${process.version}\n`);
  console.log('(a) tenant GET /org/v1/apps beside an unauthenticated BBS build flood');
  console.log(
    'configuration                          rest p50  rest p99  flood p50  flood p99  n(flood)  flood answers',
  );
  for (const [name, r] of Object.entries(flood) as Array<[keyof typeof CONFIGS, FloodResult]>) {
    console.log(
      `${CONFIGS[name].label.padEnd(38)} ${fmt(r.rest.p50)}  ${fmt(r.rest.p99)}  ${fmt(r.flood.p50)}    ${fmt(r.flood.p99)}  ${String(r.flood.n).padStart(8)}  ${counts(r.attacker)}`,
    );
  }
  console.log('\n(b) GET session at rest and while 4 clients verify BBS and Groth16 presentations at full speed');
  console.log(
    'configuration                          rest p50  rest p99   busy p50   busy p99  verifications/s  answers',
  );
  for (const [name, r] of Object.entries(verify) as Array<[keyof typeof CONFIGS, VerifyResult]>) {
    console.log(
      `${CONFIGS[name].label.padEnd(38)} ${fmt(r.rest.p50)}  ${fmt(r.rest.p99)}  ${fmt(r.busy.p50)}    ${fmt(r.busy.p99)}  ${r.verificationsPerSecond.toFixed(1).padStart(15)}  ${counts(r.verifications)}`,
    );
  }
  console.log('\n(c) tenant GET /org/v1/apps beside a flood of wrong-nonce consents from one address');
  console.log(
    'configuration                          rest p50  rest p99  flood p50  flood p99  n(flood)  flood answers',
  );
  const junkRows: Array<[string, FloodResult]> = [
    ...(Object.entries(junk) as Array<[keyof typeof CONFIGS, FloodResult]>).map(
      ([name, r]) => [CONFIGS[name].label, r] as [string, FloodResult],
    ),
    ...(junkFloor ? [['floor: bare node:http, no work', junkFloor] as [string, FloodResult]] : []),
  ];
  for (const [label, r] of junkRows) {
    console.log(
      `${label.padEnd(38)} ${fmt(r.rest.p50)}  ${fmt(r.rest.p99)}  ${fmt(r.flood.p50)}    ${fmt(r.flood.p99)}  ${String(r.flood.n).padStart(8)}  ${counts(r.attacker)}  p99 x${(r.flood.p99 / r.rest.p99).toFixed(1)}`,
    );
  }
  console.log('\nLatencies in ms. Shared, noisy machine: compare rows of this run, not runs.');
  if (values.json) {
    const round = (l: Latency) => ({ n: l.n, p50_ms: +l.p50.toFixed(2), p99_ms: +l.p99.toFixed(2), errors: l.errors });
    console.log(
      JSON.stringify({
        flood: Object.fromEntries(
          Object.entries(flood).map(([k, r]) => [
            k,
            { rest: round(r.rest), flood: round(r.flood), attacker: r.attacker },
          ]),
        ),
        junk: Object.fromEntries(
          [...Object.entries(junk), ...(junkFloor ? [['floor', junkFloor] as const] : [])].map(([k, r]) => [
            k,
            {
              rest: round(r.rest),
              flood: round(r.flood),
              attacker: r.attacker,
              p99_ratio: +(r.flood.p99 / r.rest.p99).toFixed(2),
            },
          ]),
        ),
        verify: Object.fromEntries(
          Object.entries(verify).map(([k, r]) => [
            k,
            {
              rest: round(r.rest),
              busy: round(r.busy),
              verifications_per_s: +r.verificationsPerSecond.toFixed(1),
              answers: r.verifications,
            },
          ]),
        ),
      }),
    );
  }
}

if (values.serve) await serve();
else await main();
