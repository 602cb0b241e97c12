/**
 * The service's CPU time per request of one route alone, for a before/after of a change on that
 * route: bench/sessions.ts interleaves create, get and healthz, and on this shared machine its
 * per-request figures move by a fifth between runs. Here only the one route is loaded, in several
 * runs of many requests each, and each run's CPU time of the service process per request is
 * printed (from /proc, as sessions.ts measures it); alternate two invocations, one with
 * `--service-root` on the "before" checkout, and compare the medians.
 *
 *   node --import tsx bench/route-cpu.ts [--operation get|create|healthz] [--requests 30000]
 *       [--runs 3] [--concurrency 16] [--database sqlite|postgres] [--service-root DIR]
 *       [--cpu-prof DIR] [--json]
 *
 * With --json the last line is {"operation", "database", "cpu_us": [per run], "median_cpu_us",
 * "rps": [per run]}. Figures are printed, never asserted.
 */
import { parseArgs } from 'node:util';
import {
  benchDatabase,
  load,
  median,
  REPO_ROOT,
  startService,
  tenantWithSession,
  type BenchDialect,
  type BenchRequest,
} from './support.ts';

const { values } = parseArgs({
  options: {
    operation: { type: 'string', default: 'get' },
    requests: { type: 'string', default: '30000' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '16' },
    database: { type: 'string', default: 'sqlite' },
    'service-root': { type: 'string', default: REPO_ROOT },
    'cpu-prof': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const operation = values.operation;
if (operation !== 'get' && operation !== 'create' && operation !== 'healthz')
  throw new Error(`--operation: get, create or healthz, not ${operation}`);
if (values.database !== 'sqlite' && values.database !== 'postgres')
  throw new Error(`--database: sqlite or postgres, not ${values.database}`);
const dialect: BenchDialect = values.database;
const [requests, runs, concurrency] = [values.requests, values.runs, values.concurrency].map(Number);
if (![requests, runs, concurrency].every((n) => Number.isInteger(n) && n > 0))
  throw new Error('--requests, --runs and --concurrency: positive whole numbers');

const database = await benchDatabase(dialect);
const service = await startService({
  root: values['service-root'],
  databaseUrl: database.url,
  name: `service-${dialect}`,
  cpuProfDir: values['cpu-prof'],
  compiled: false,
});
try {
  const { headers, createBody, sessionId } = await tenantWithSession(service, database.url, values['service-root']);
  const make = (): BenchRequest =>
    operation === 'create'
      ? { method: 'POST', path: '/verification/v1/sessions', body: createBody }
      : { method: 'GET', path: operation === 'get' ? `/verification/v1/sessions/${sessionId}` : '/healthz' };
  await load('warmup', service, 3000, concurrency, make, headers);
  const results = [];
  for (let run = 0; run < runs; run++) {
    const result = await load(operation, service, requests, concurrency, make, headers);
    if (result.errors > 0) throw new Error(`${result.errors} errors, the first: ${result.firstError}`);
    console.log(
      `${operation} run ${run + 1}: ${Math.round(result.rps)} req/s, ${result.cpuPerRequest.toFixed(1)} µs of the service's CPU per request`,
    );
    results.push(result);
  }
  const cpu = results.map((r) => Math.round(r.cpuPerRequest * 10) / 10);
  console.log(`median: ${median(cpu).toFixed(1)} µs per request (${values['service-root']}, ${dialect})`);
  if (values.json)
    console.log(
      JSON.stringify({
        operation,
        database: dialect,
        cpu_us: cpu,
        median_cpu_us: median(cpu),
        rps: results.map((r) => Math.round(r.rps)),
      }),
    );
} finally {
  await service.stop();
  await database.drop();
}
