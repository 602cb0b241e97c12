/**
 * Memory of the `all` process under load: the resident set size of `src/main.ts` (role all, the
 * single-process default: API, delivery worker and periodic jobs) at start, after 100k requests
 * and after a second 100k. Goal: at most 200 MB, and flat from the first 100k to the second.
 *
 *   node --import tsx bench/rss.ts [--requests 100000] [--concurrency 16] [--database sqlite|postgres]
 *       [--service-root DIR] [--compiled] [--json]
 *
 * `--compiled` runs the compiled build (`node dist/main.js`, the production start of docs/operations.md; `npm run build`
 * first) instead of src/main.ts under tsx, whose loader and compile cache take memory of their own.
 * The requests are the session API's hot paths, three reads of a session for one creation. With
 * --json the last line is {"rss_mb_at_start", "rss_mb_after_100k", "rss_mb_after_200k", …}. The V8 heap
 * in use (the service's /metrics) is printed beside RSS: RSS alone cannot tell a leak from a heap
 * that V8 has not shrunk yet. At each point both are read twice: as the load left them, then after
 * a full collection in the service, made through its inspector (the service runs with
 * `--inspect=127.0.0.1:0`): the second reading is what the process holds, garbage left out.
 */
import { parseArgs } from 'node:util';
import {
  benchDatabase,
  load,
  REPO_ROOT,
  startService,
  tenantWithSession,
  type BenchDialect,
  type BenchRequest,
} from './support.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '16' },
    database: { type: 'string', default: 'sqlite' },
    'service-root': { type: 'string', default: REPO_ROOT },
    compiled: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
if (values.database !== 'sqlite' && values.database !== 'postgres')
  throw new Error(`--database: sqlite or postgres, not ${values.database}`);
const dialect = values.database as BenchDialect;

/** The V8 heap in use, MB, from the service's own /metrics (prom-client's default metrics). */
async function heapUsedMb(origin: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const match = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(text);
  return match ? Number(match[1]) / 1024 / 1024 : NaN;
}

async function main(): Promise<void> {
  const database = await benchDatabase(dialect);
  const service = await startService({
    root: values['service-root'],
    databaseUrl: database.url,
    name: 'rss',
    compiled: values.compiled,
    inspect: true,
  });
  try {
    const { headers, createBody, sessionId } = await tenantWithSession(service, database.url, values['service-root']);
    const make = (i: number): BenchRequest =>
      i % 4 === 3
        ? { method: 'POST', path: '/verification/v1/sessions', body: createBody }
        : { method: 'GET', path: `/verification/v1/sessions/${sessionId}` };

    /** RSS and heap in use as the load left them, then after a full collection. */
    const read = async () => {
      const rss = service.rssMb();
      const heap = await heapUsedMb(service.origin);
      if (!service.collectGarbage) throw new Error('the service printed no inspector address');
      await service.collectGarbage();
      return { rss, heap, rssCollected: service.rssMb(), heapCollected: await heapUsedMb(service.origin) };
    };
    const atStart = await read();
    const first = await load('first', service, REQUESTS, CONCURRENCY, make, headers);
    const after1 = await read();
    const second = await load('second', service, REQUESTS, CONCURRENCY, make, headers);
    const after2 = await read();
    const round1 = (n: number) => Math.round(n * 10) / 10;
    const row = (label: string, r: typeof atStart, rps = '', errors = '') =>
      label.padEnd(20) +
      [r.rss, r.heap, r.rssCollected, r.heapCollected].map((n) => n.toFixed(1).padStart(10)).join('') +
      rps.padStart(8) +
      errors.padStart(8);

    console.log(
      `\nbench/rss.ts  database=${dialect}  requests=${REQUESTS} twice  concurrency=${CONCURRENCY}  service=${values['service-root']}${values.compiled ? 'dist/main.js' : 'src/main.ts (tsx)'}\n`,
    );
    console.log('                        as left (MB)     after a full GC (MB)');
    console.log('phase                      RSS      heap       RSS      heap   req/s  errors');
    console.log(row('at start', atStart));
    console.log(row(`after ${REQUESTS}`, after1, first.rps.toFixed(0), String(first.errors)));
    console.log(row(`after ${2 * REQUESTS}`, after2, second.rps.toFixed(0), String(second.errors)));
    for (const r of [first, second])
      if (r.firstError) console.log(`first error of the ${r.label} 100k: ${r.firstError}`);
    if (values.json)
      console.log(
        JSON.stringify({
          database: dialect,
          compiled: values.compiled,
          requests: REQUESTS,
          rss_mb_at_start: round1(atStart.rss),
          rss_mb_after_100k: round1(after1.rss),
          rss_mb_after_200k: round1(after2.rss),
          heap_used_mb: [atStart, after1, after2].map((r) => round1(r.heap)),
          // After a full collection in the service: what it holds, garbage left out.
          rss_mb_collected: [atStart, after1, after2].map((r) => round1(r.rssCollected)),
          heap_used_mb_collected: [atStart, after1, after2].map((r) => round1(r.heapCollected)),
          errors: first.errors + second.errors,
        }),
      );
    if (first.errors + second.errors > 0) process.exitCode = 1;
  } finally {
    await service.stop();
    await database.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
