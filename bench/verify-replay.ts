/**
 * What the replay guard of direct verify costs (issue 10, finding 2): `verifyDirectly` (the
 * session-nonce check, the spent-nonce check, the verifiers, the insert that spends the nonce)
 * beside `checkPresentation` alone (what `/verify` did before: the verifiers only), in the same
 * run, on the same presentations.
 *
 *   node --import tsx bench/verify-replay.ts [--count 300] [--database sqlite|postgres] [--json]
 *
 * PostgreSQL uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a schema of its own, dropped after).
 * SD-JWT VC presentations (the cheapest format, so the guard's share is the largest), each with a
 * nonce of its own, are built before timing. The two contenders alternate, their order rotating
 * every iteration, so that noise on this shared machine hits them alike. Figures are printed,
 * never asserted; with --json the last line is one JSON object.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { TestClock } from '../src/domain/clock.ts';
import { verifyDirectly } from '../src/services/direct-verify.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { checkPresentation } from '../src/services/presentations.ts';
import { seedSandboxIssuers } from '../src/services/trust-registry.ts';
import { BUILDERS } from '../test/support/builders.ts';
import { buildTestApp, createTestStore, principalOf, testConfig } from '../test/support/harness.ts';
import { ACTIVE_STUDENT } from '../test/support/sessions.ts';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '300' },
    database: { type: 'string', default: 'sqlite' },
    json: { type: 'boolean', default: false },
  },
});
const COUNT = Number(values.count);
const dialect = values.database === 'postgres' ? 'postgres' : 'sqlite';
if (dialect === 'postgres') process.env.TEST_DATABASE_URL ??= process.env.BENCH_DATABASE_URL;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const summary = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { median_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99) };
};

const test = await createTestStore(dialect);
try {
  const clock = new TestClock();
  await seedSandboxIssuers(test.store.db, clock);
  const config = testConfig();
  const { app, services } = await buildTestApp(test.store, clock, config);
  const created = await createOrganization({ db: test.store.db, clock }, { name: 'Bench', environment: 'sandbox' });
  const principal = principalOf(created);
  type Body = { format: 'sd-jwt-vc'; presentation: unknown; nonce: string; audience: string };
  const bodies: Body[] = [];
  for (let i = 0; i < COUNT; i++) {
    const nonce = `nonce_bench-replay-${i}`;
    const presentation = await BUILDERS['sd-jwt-vc'].present(ACTIVE_STUDENT, {
      nonce,
      audience: config.baseUrl,
      now: clock.now(),
      disclose: ['is_active_student', 'valid_until'],
    });
    bodies.push({ format: 'sd-jwt-vc' as const, presentation, nonce, audience: config.baseUrl });
  }
  const contenders = {
    'checkPresentation (no guard)': async (body: Body) => {
      const outcome = await checkPresentation(services, {
        ...body,
        environment: 'sandbox',
        requiredClaims: undefined,
        now: clock.now(),
        profiles: await services.profiles.accepted(),
      });
      return outcome.kind === 'judged' && outcome.result.verified;
    },
    'verifyDirectly (guarded)': async (body: Body) =>
      (await verifyDirectly(services, principal, { ...body, requiredClaims: undefined })).verified,
  };
  const names = Object.keys(contenders) as Array<keyof typeof contenders>;
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  let failures = 0;
  for (let i = 0; i < COUNT; i++) {
    const order = i % 2 ? [...names].reverse() : names;
    for (const name of order) {
      const started = performance.now();
      const ok = await contenders[name](bodies[i]);
      samples[name].push(performance.now() - started);
      if (!ok) failures++;
    }
  }
  // Each nonce was spent once: a second guarded pass must refuse every one of them.
  let replaysRefused = 0;
  for (const body of bodies.slice(0, 20)) {
    if (
      (await verifyDirectly(services, principal, { ...body, requiredClaims: undefined })).failureReason ===
      'nonce_reused'
    )
      replaysRefused++;
  }
  const results = Object.fromEntries(names.map((n) => [n, summary(samples[n])]));
  const [base, guarded] = names.map((n) => results[n]);
  console.log(`direct verify, ${COUNT} sd-jwt-vc presentations on ${dialect}, load average ${loadavg()[0].toFixed(1)}`);
  for (const name of names)
    console.log(
      `  ${name.padEnd(30)} median ${results[name].median_ms.toFixed(2)} ms  p99 ${results[name].p99_ms.toFixed(2)} ms`,
    );
  console.log(
    `  guard overhead: median +${(guarded.median_ms - base.median_ms).toFixed(2)} ms (${(guarded.median_ms / base.median_ms).toFixed(2)}x); replays refused ${replaysRefused}/20; failures ${failures}`,
  );
  if (values.json)
    console.log(
      JSON.stringify({
        database: dialect,
        count: COUNT,
        load_average: loadavg()[0],
        baseline_median_ms: base.median_ms,
        baseline_p99_ms: base.p99_ms,
        guarded_median_ms: guarded.median_ms,
        guarded_p99_ms: guarded.p99_ms,
        overhead_median_ms: guarded.median_ms - base.median_ms,
        ratio: guarded.median_ms / base.median_ms,
        replays_refused: replaysRefused,
        failures,
      }),
    );
  await app.close();
  if (failures > 0 || replaysRefused !== 20) process.exitCode = 1;
} finally {
  await test.drop();
}
