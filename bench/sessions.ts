/**
 * Session API throughput on loopback, beside a bare node:http server answering the same JSON in
 * the same run with the same client: create-session (POST) and get-session (GET).
 *
 *   node --import tsx bench/sessions.ts [--requests 12000] [--concurrency 16] [--rounds 3]
 *       [--database sqlite,postgres] [--service-root DIR] [--compiled] [--cpu-prof DIR]
 *       [--calibrate 25,50,100] [--floor] [--json]
 *
 * The service runs as an operator runs it, `node --import tsx src/main.ts` (role all, default
 * logging, to /dev/null), in a process of its own; the bare server runs in a process of its own
 * too, so that neither shares the client's core. `--service-root` starts another checkout's
 * src/main.ts with this same client (the "before" of a before/after); `--compiled` runs the compiled
 * build (`node dist/main.js`; `npm run build` first) instead; `--cpu-prof DIR` profiles the
 * service (summarize with bench/cpuprofile.ts). PostgreSQL uses BENCH_DATABASE_URL or
 * TEST_DATABASE_URL, in a schema of its own dropped after.
 *
 * The operations are create-session, get-session and GET /healthz, the floor: Fastify and every
 * hook the service installs, with no database and no key. Each round loads the service, then the bare server, for each operation; the ratio of a round is
 * service req/s ÷ bare req/s, and the figure reported is the median over the rounds. With --json
 * the last line is {"sqlite": {"get_ratio", "create_ratio", …}, "postgres": {…}, "loadavg": […]}.
 *
 * `--calibrate 25,50,100` then loads bare servers that spend that many microseconds of CPU on
 * each GET before answering (a busy loop), against the plain bare server: the ratio a server
 * reaches that does exactly that much more work per request, the scale the service's ratio reads
 * on (`"calibration": [{"work_us", "get_ratio", "cpu_us", "bare_cpu_us"}]` in the JSON).
 *
 * `--floor` adds, in each round, a bare server that does only what each route cannot skip
 * while a revoked key must be refused by the very next request (bench/bare-server.ts): the key's
 * SHA-256 and its read, with the session's read (GET) or the session's insert and commit (POST),
 * on the service's database. Its ratios to the plain bare server (`floor_get_ratio`,
 * `floor_create_ratio`, with their `_cpu_us`) are the most any service doing that work reaches
 * here, whatever its framework; `get_vs_floor` and `create_vs_floor` are the service's req/s ÷ the
 * floor's in the same round (median). On PostgreSQL, `get_db_cpu_us` and `create_db_cpu_us` (with
 * the floor's, `floor_…`) are the database server's CPU per request, every process of it on this
 * machine, sampled from /proc around each load: what the statements cost PostgreSQL, which the
 * server process's CPU leaves out (a statement planned afresh on every run showed there only).
 * `--requests` is per operation and round, 12,000 by default: more than the service's in-process
 * caches hold (10,000 derived secrets, request URIs), so that the rounds measure a service that has
 * been running, whose caches are full and evict, not one still filling them. At 3,000 (the
 * default until the tenth sitting) the cost of eviction, 5 µs a set then, went unseen.
 * Figures are printed, never asserted: the machine is shared and noisy.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import {
  benchDatabase,
  load,
  median,
  postgresCpuMicros,
  REPO_ROOT,
  startBare,
  startService,
  tenantWithSession,
  type BenchDialect,
  type BenchRequest,
  type LoadResult,
  type ServiceProcess,
} from './support.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '12000' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    database: { type: 'string', default: 'sqlite' },
    'service-root': { type: 'string', default: REPO_ROOT },
    'cpu-prof': { type: 'string' },
    compiled: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    calibrate: { type: 'string' },
    floor: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const works =
  values.calibrate === undefined ? [] : values.calibrate.split(',').map((w) => (w.trim() === '' ? NaN : Number(w)));
if (works.some((w) => !Number.isFinite(w) || w < 0)) throw new Error('--calibrate: microseconds, e.g. 25,50,100');
const dialects = values.database.split(',').map((d) => {
  if (d !== 'sqlite' && d !== 'postgres') throw new Error(`--database: sqlite or postgres, not ${d}`);
  return d as BenchDialect;
});

interface DialectFigures {
  get_ratio: number;
  create_ratio: number;
  get_rps: number;
  create_rps: number;
  bare_get_rps: number;
  bare_create_rps: number;
  get_p99_ms: number;
  create_p99_ms: number;
  /** CPU time of the server process per request, microseconds: moves less with the load than req/s. */
  get_cpu_us: number;
  create_cpu_us: number;
  bare_get_cpu_us: number;
  bare_create_cpu_us: number;
  /** GET /healthz on the service ÷ the bare server's GET: what the framework and the hooks leave. */
  healthz_ratio: number;
  healthz_cpu_us: number;
  /** `--floor`: a bare server doing only what the route cannot skip (bare-server.ts), ÷ the bare server. */
  floor_get_ratio?: number;
  floor_get_cpu_us?: number;
  floor_create_ratio?: number;
  floor_create_cpu_us?: number;
  /** The service's req/s ÷ the floor's, same round (median): how much of the floor it reaches. */
  get_vs_floor?: number;
  create_vs_floor?: number;
  /**
   * PostgreSQL: the database server's CPU per request (every process of it on this machine), the
   * service's and, with `--floor`, the floor's: what the statements cost the server, which the
   * service's own CPU leaves out.
   */
  get_db_cpu_us?: number;
  create_db_cpu_us?: number;
  floor_get_db_cpu_us?: number;
  floor_create_db_cpu_us?: number;
  /**
   * `--floor`: the floor's work served by Fastify with nothing of the service's (no hooks, schemas
   * or serializer), ÷ the bare server; the service ÷ it; and it ÷ the floor (what Fastify costs).
   */
  fastify_floor_get_ratio?: number;
  fastify_floor_get_cpu_us?: number;
  fastify_floor_create_ratio?: number;
  fastify_floor_create_cpu_us?: number;
  get_vs_fastify_floor?: number;
  create_vs_fastify_floor?: number;
  fastify_floor_vs_floor_get?: number;
  fastify_floor_vs_floor_create?: number;
  errors: number;
}

/** The bodies Matricula answered, for the calibration's bare servers to answer the same. */
let answered: { create: string; read: string } | undefined;

interface Calibration {
  /** CPU time the bare server spent on each GET before answering, beyond its own work. */
  work_us: number;
  /** Its req/s ÷ the plain bare server's, same client, same run. */
  get_ratio: number;
  cpu_us: number;
  bare_cpu_us: number;
}

/**
 * What ratio a bare server reaches when it does a known amount of work more per GET than the
 * plain bare server (a busy loop of `workUs`), measured like the service: the scale the service's
 * ratio reads on. On a machine where the client holds one core, a server that makes the client
 * wait pays more than its own work per request (the answers wake an idle client), so the ratio falls
 * faster than the work alone would say.
 */
async function calibrate(bodies: { create: string; read: string }, works: number[]): Promise<Calibration[]> {
  const bare = await startBare(bodies.create, bodies.read);
  const make = (): BenchRequest => ({ method: 'GET', path: '/verification/v1/sessions/calibration' });
  const figures: Calibration[] = [];
  try {
    for (const workUs of works) {
      const worked = await startBare(bodies.create, bodies.read, workUs);
      try {
        await load('warmup', worked, 500, CONCURRENCY, make, {});
        await load('warmup', bare, 500, CONCURRENCY, make, {});
        const runs: Array<[LoadResult, LoadResult]> = [];
        for (let round = 0; round < ROUNDS; round++) {
          const ours = await load(`bare + ${workUs} µs get`, worked, REQUESTS, CONCURRENCY, make, {});
          const base = await load('bare node:http get', bare, REQUESTS, CONCURRENCY, make, {});
          runs.push([ours, base]);
          console.log(`${row(ours)}\n${row(base)}\n  round ${round + 1} ratio ${(ours.rps / base.rps).toFixed(3)}`);
        }
        figures.push({
          work_us: workUs,
          get_ratio: round3(median(runs.map(([o, b]) => o.rps / b.rps))),
          cpu_us: Math.round(median(runs.map(([o]) => o.cpuPerRequest))),
          bare_cpu_us: Math.round(median(runs.map(([, b]) => b.cpuPerRequest))),
        });
      } finally {
        await worked.stop();
      }
    }
  } finally {
    await bare.stop();
  }
  return figures;
}

const row = (r: LoadResult) =>
  `${r.label.padEnd(34)} ${r.rps.toFixed(0).padStart(8)} ${r.p50.toFixed(2).padStart(9)} ${r.p99.toFixed(2).padStart(8)} ${r.cpuPerRequest.toFixed(0).padStart(10)} ${String(r.errors).padStart(7)}`;

async function benchDialect(dialect: BenchDialect): Promise<DialectFigures> {
  const database = await benchDatabase(dialect);
  const databaseCpu = dialect === 'postgres' ? postgresCpuMicros : undefined;
  const service = await startService({
    root: values['service-root'],
    databaseUrl: database.url,
    name: `service-${dialect}`,
    cpuProfDir: values['cpu-prof'],
    compiled: values.compiled,
  });
  try {
    // Bodies the bare server answers with: exactly what Matricula answered.
    const { headers, createBody, sessionId, createdJson, readJson } = await tenantWithSession(
      service,
      database.url,
      values['service-root'],
    );
    answered ??= { create: createdJson, read: readJson };
    const bare = await startBare(createdJson, readJson);
    const floor = values.floor ? await startBare(createdJson, readJson, 0, database.url) : undefined;
    const fastifyFloor = values.floor ? await startBare(createdJson, readJson, 0, database.url, 'fastify') : undefined;
    try {
      const operations: Array<[string, () => BenchRequest]> = [
        ['create session', () => ({ method: 'POST', path: '/verification/v1/sessions', body: createBody })],
        ['get session', () => ({ method: 'GET', path: `/verification/v1/sessions/${sessionId}` })],
        // The floor: Fastify with every hook the service installs, answering without the database.
        ['healthz', () => ({ method: 'GET', path: '/healthz' })],
      ];
      for (const [, make] of operations) {
        await load('warmup', service, 500, CONCURRENCY, make, headers);
        await load('warmup', bare, 500, CONCURRENCY, make, headers);
      }
      for (const server of [floor, fastifyFloor])
        if (server)
          for (const [, make] of operations.slice(0, 2)) await load('warmup', server, 500, CONCURRENCY, make, headers);
      const floorRuns = new Map<string, Array<[LoadResult, LoadResult]>>();
      const fastifyFloorRuns = new Map<string, Array<[LoadResult, LoadResult]>>();
      const results = new Map<string, Array<[LoadResult, LoadResult]>>();
      if (!values.json)
        console.log(`\n${dialect}: operation                 req/s     p50 ms   p99 ms  cpu µs/req  errors`);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, make] of operations) {
          const ours = await load(`matricula ${name}`, service, REQUESTS, CONCURRENCY, make, headers, databaseCpu);
          const base = await load(`bare node:http ${name}`, bare, REQUESTS, CONCURRENCY, make, headers);
          results.set(name, [...(results.get(name) ?? []), [ours, base]]);
          console.log(`${row(ours)}\n${row(base)}\n  round ${round + 1} ratio ${(ours.rps / base.rps).toFixed(3)}`);
          for (const r of [ours, base]) if (r.firstError) console.log(`  first error of ${r.label}: ${r.firstError}`);
        }
        const floors: Array<[string, ServiceProcess | undefined, typeof floorRuns]> = [
          ['floor', floor, floorRuns],
          ['fastify floor', fastifyFloor, fastifyFloorRuns],
        ];
        for (const [label, server, runs] of floors) {
          if (!server) continue;
          for (const [name, make] of operations.slice(0, 2)) {
            const ours = await load(`${label} ${name}`, server, REQUESTS, CONCURRENCY, make, headers, databaseCpu);
            const base = await load(`bare node:http ${name}`, bare, REQUESTS, CONCURRENCY, make, headers);
            runs.set(name, [...(runs.get(name) ?? []), [ours, base]]);
            console.log(`${row(ours)}\n${row(base)}\n  round ${round + 1} ratio ${(ours.rps / base.rps).toFixed(3)}`);
            if (ours.firstError) console.log(`  first error of ${ours.label}: ${ours.firstError}`);
          }
        }
      }
      const pick = (name: string, from = results) => {
        const runs = from.get(name)!;
        return {
          ratio: median(runs.map(([o, b]) => o.rps / b.rps)),
          rps: median(runs.map(([o]) => o.rps)),
          bare: median(runs.map(([, b]) => b.rps)),
          p99: median(runs.map(([o]) => o.p99)),
          cpu: median(runs.map(([o]) => o.cpuPerRequest)),
          databaseCpu: median(runs.map(([o]) => o.databaseCpuPerRequest ?? NaN)),
          bareCpu: median(runs.map(([, b]) => b.cpuPerRequest)),
          errors: runs.reduce((n, [o]) => n + o.errors, 0),
        };
      };
      const get = pick('get session');
      const create = pick('create session');
      const healthz = pick('healthz');
      /** The service's req/s ÷ the floor's, each round's pair loaded one after the other: median. */
      const versusFloor = (name: string, runs = floorRuns, of = results) =>
        median(of.get(name)!.map(([ours], round) => ours.rps / runs.get(name)![round][0].rps));
      const floorGet = floor ? pick('get session', floorRuns) : undefined;
      const floorCreate = floor ? pick('create session', floorRuns) : undefined;
      const fastifyGet = fastifyFloor ? pick('get session', fastifyFloorRuns) : undefined;
      const fastifyCreate = fastifyFloor ? pick('create session', fastifyFloorRuns) : undefined;
      return {
        get_ratio: round3(get.ratio),
        create_ratio: round3(create.ratio),
        get_rps: Math.round(get.rps),
        create_rps: Math.round(create.rps),
        bare_get_rps: Math.round(get.bare),
        bare_create_rps: Math.round(create.bare),
        get_p99_ms: round3(get.p99),
        create_p99_ms: round3(create.p99),
        get_cpu_us: Math.round(get.cpu),
        create_cpu_us: Math.round(create.cpu),
        bare_get_cpu_us: Math.round(get.bareCpu),
        bare_create_cpu_us: Math.round(create.bareCpu),
        healthz_ratio: round3(healthz.ratio),
        healthz_cpu_us: Math.round(healthz.cpu),
        ...(dialect === 'postgres'
          ? { get_db_cpu_us: Math.round(get.databaseCpu!), create_db_cpu_us: Math.round(create.databaseCpu!) }
          : {}),
        ...(floorGet && floorCreate && dialect === 'postgres'
          ? {
              floor_get_db_cpu_us: Math.round(floorGet.databaseCpu!),
              floor_create_db_cpu_us: Math.round(floorCreate.databaseCpu!),
            }
          : {}),
        ...(floorGet && floorCreate
          ? {
              floor_get_ratio: round3(floorGet.ratio),
              floor_get_cpu_us: Math.round(floorGet.cpu),
              floor_create_ratio: round3(floorCreate.ratio),
              floor_create_cpu_us: Math.round(floorCreate.cpu),
              get_vs_floor: round3(versusFloor('get session')),
              create_vs_floor: round3(versusFloor('create session')),
            }
          : {}),
        ...(fastifyGet && fastifyCreate
          ? {
              fastify_floor_get_ratio: round3(fastifyGet.ratio),
              fastify_floor_get_cpu_us: Math.round(fastifyGet.cpu),
              fastify_floor_create_ratio: round3(fastifyCreate.ratio),
              fastify_floor_create_cpu_us: Math.round(fastifyCreate.cpu),
              get_vs_fastify_floor: round3(versusFloor('get session', fastifyFloorRuns)),
              create_vs_fastify_floor: round3(versusFloor('create session', fastifyFloorRuns)),
              fastify_floor_vs_floor_get: round3(versusFloor('get session', floorRuns, fastifyFloorRuns)),
              fastify_floor_vs_floor_create: round3(versusFloor('create session', floorRuns, fastifyFloorRuns)),
            }
          : {}),
        errors:
          get.errors +
          create.errors +
          healthz.errors +
          [floorGet, floorCreate, fastifyGet, fastifyCreate].reduce((n, f) => n + (f?.errors ?? 0), 0),
      };
    } finally {
      await bare.stop();
      await floor?.stop();
      await fastifyFloor?.stop();
    }
  } finally {
    await service.stop();
    await database.drop();
  }
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

async function main(): Promise<void> {
  const started = loadavg();
  const figures: Partial<Record<BenchDialect, DialectFigures>> = {};
  for (const dialect of dialects) figures[dialect] = await benchDialect(dialect);
  const calibration = works.length > 0 && answered ? await calibrate(answered, works) : [];
  const ended = loadavg();
  console.log(
    `\nbench/sessions.ts  requests=${REQUESTS}  concurrency=${CONCURRENCY}  rounds=${ROUNDS}  node=${process.version}` +
      `  service=${values['service-root']}${values.compiled ? 'dist/main.js' : 'src/main.ts (tsx)'}\nload average (1 min) ${started[0].toFixed(2)} at start, ${ended[0].toFixed(2)} at end\n`,
  );
  console.log(
    'database   get ratio  create ratio  get req/s (bare)   create req/s (bare)  get cpu µs (bare)  create cpu µs (bare)  healthz ratio (cpu µs)  errors',
  );
  for (const [dialect, f] of Object.entries(figures))
    console.log(
      `${dialect.padEnd(10)} ${f.get_ratio.toFixed(3).padStart(9)} ${f.create_ratio.toFixed(3).padStart(13)}` +
        `  ${`${f.get_rps} (${f.bare_get_rps})`.padStart(16)}  ${`${f.create_rps} (${f.bare_create_rps})`.padStart(19)}` +
        `  ${`${f.get_cpu_us} (${f.bare_get_cpu_us})`.padStart(17)}  ${`${f.create_cpu_us} (${f.bare_create_cpu_us})`.padStart(20)}` +
        `  ${`${f.healthz_ratio.toFixed(3)} (${f.healthz_cpu_us})`.padStart(22)}  ${f.errors}`,
    );
  for (const [dialect, f] of Object.entries(figures))
    if (f.floor_get_ratio !== undefined && f.floor_create_ratio !== undefined)
      console.log(
        `\nfloor (${dialect}), a bare server doing only the key's hash, its read and the session's read or insert:` +
          `\n  get ratio ${f.floor_get_ratio.toFixed(3)}, ${f.floor_get_cpu_us} cpu µs (the service: ${f.get_ratio.toFixed(3)}, ${f.get_cpu_us}; ${f.get_vs_floor?.toFixed(3)} of the floor)` +
          `\n  create ratio ${f.floor_create_ratio.toFixed(3)}, ${f.floor_create_cpu_us} cpu µs (the service: ${f.create_ratio.toFixed(3)}, ${f.create_cpu_us}; ${f.create_vs_floor?.toFixed(3)} of the floor)` +
          (f.floor_create_db_cpu_us === undefined
            ? ''
            : `\n  PostgreSQL's cpu µs per get ${f.floor_get_db_cpu_us} (the service's: ${f.get_db_cpu_us}), per create ${f.floor_create_db_cpu_us} (the service's: ${f.create_db_cpu_us})`),
      );
  if (calibration.length > 0) {
    console.log('\ncalibration: a bare server doing more work per GET   ratio   cpu µs (bare)   cpu beyond the work');
    for (const c of calibration)
      console.log(
        `  + ${String(c.work_us).padStart(4)} µs of work${' '.repeat(33)}${c.get_ratio.toFixed(3)}   ${`${c.cpu_us} (${c.bare_cpu_us})`.padStart(13)}   ${String(c.cpu_us - c.work_us - c.bare_cpu_us).padStart(19)}`,
      );
  }
  if (values.json)
    console.log(
      JSON.stringify({
        ...figures,
        ...(calibration.length > 0 ? { calibration } : {}),
        loadavg: [round3(started[0]), round3(ended[0])],
        requests: REQUESTS,
      }),
    );
  const errors = Object.values(figures).reduce((n, f) => n + f.errors, 0);
  if (errors > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
