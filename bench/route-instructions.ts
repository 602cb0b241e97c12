/**
 * Instructions per session GET (or, with `--route create`, per session created) under valgrind's
 * callgrind, on SQLite (or `--database postgres`: the service's own work, not PostgreSQL's), of
 * the service, the floor (bench/bare-server.ts: node:http with only the key's hash and the one
 * read, or the insert) and the same floor served by Fastify: what each spends in user space per request, counted rather than timed. On a
 * host where the same service's CPU per GET moved from 93 to 155 µs between invocations, the
 * service's count repeated within 2 % over four (bench/README.md, route-instructions.ts); the
 * floor's read 20 % above its usual once, so compare more than one invocation.
 *
 *   node --import tsx bench/route-instructions.ts [--requests 2000] [--warmup 8000]
 *       [--servers service,floor,fastify] [--route get|create] [--database sqlite|postgres]
 *       [--cache-sim] [--top 30] [--keep DIR] [--json]
 *
 * Each server runs under `valgrind --tool=callgrind` with instrumentation off while it starts and
 * while `--warmup` GETs let V8 compile its hot code; instrumentation is on for `--requests` GETs
 * sent one at a time, then the counts are dumped. One thread per file (--separate-threads): the
 * figure is the main thread's, where the requests run; all threads' is printed beside it (V8's
 * compiler and GC helpers). Kernel time (the syscalls, the same four per GET for the three
 * servers) is not counted. `--cache-sim` adds callgrind's cache model: first-level and last-level
 * misses per GET. A create's count moves more between invocations than a GET's (a scavenge or a
 * compilation more or less in the window: 565 to 659 k for the same code): give it
 * `--warmup 12000 --requests 3000`, past the service's caches filling (10,000 sessions), and
 * compare several invocations. Slow: about a minute per server. Figures are printed, never
 * asserted; with --json the last line is {"service": {"main_k", "all_k", …}, "floor": {…}, "fastify": {…}}.
 *
 * `--top N` says where the service's instructions go beside the last other server measured (Fastify's
 * floor by default): the N functions of the main thread whose instructions per GET differ the most
 * between the two, each function's own instructions (not its callees'), from `callgrind_annotate`.
 * V8's compiled JavaScript has no symbols for valgrind: with --top each server runs with
 * `--perf-basic-prof`, whose map (/tmp/perf-<pid>.map) names the addresses of compiled code
 * ("JS:*name file:line:column"; a `*` is optimized code). In the JSON: "top": [{"function",
 * "service", "baseline", "difference"}], instructions per GET. `--keep DIR` writes callgrind's
 * files to DIR and leaves them there (for `callgrind_annotate --tree=caller`, say), with the maps.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { unusedPort } from '../test/support/server.ts';
import { benchDatabase, REPO_ROOT, startService, tenantWithSession } from './support.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '8000' },
    servers: { type: 'string', default: 'service,floor,fastify' },
    route: { type: 'string', default: 'get' },
    database: { type: 'string', default: 'sqlite' },
    'cache-sim': { type: 'boolean', default: false },
    top: { type: 'string' },
    keep: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const WARMUP = Number(values.warmup);
const TOP = values.top === undefined ? 0 : Number(values.top);
if (![REQUESTS, WARMUP].every((n) => Number.isInteger(n) && n > 0))
  throw new Error('--requests and --warmup: positive whole numbers');
if (!Number.isInteger(TOP) || TOP < 0) throw new Error('--top: a whole number of functions');
const ROUTE = values.route;
if (ROUTE !== 'get' && ROUTE !== 'create') throw new Error(`--route: get or create, not ${ROUTE}`);
const DIALECT = values.database;
if (DIALECT !== 'sqlite' && DIALECT !== 'postgres') throw new Error(`--database: sqlite or postgres, not ${DIALECT}`);
const SERVERS = values.servers.split(',');
for (const s of SERVERS)
  if (s !== 'service' && s !== 'floor' && s !== 'fastify')
    throw new Error(`--servers: service, floor or fastify, not ${s}`);
// valgrind names its control files after HOST (the service reads HOST too): the same value for
// the server and for callgrind_control, or the commands find no process.
const HOST = '127.0.0.1';

interface Counts {
  /** Thousands of instructions per GET, the main thread's and all threads'. */
  main_k: number;
  all_k: number;
  /** With --cache-sim: first-level instruction and data misses, last-level misses, per GET. */
  l1_misses?: number;
  ll_misses?: number;
  /** With --top: each function's own instructions per GET on the main thread. */
  functions?: Map<string, number>;
}

const database = await benchDatabase(DIALECT);
const dir = values.keep ? resolve(values.keep) : mkdtempSync(join(tmpdir(), 'route-instructions-'));
mkdirSync(dir, { recursive: true });
const results: Record<string, Counts> = {};
try {
  // The tenant and session are made through a service started normally, then stopped.
  const setup = await startService({ root: REPO_ROOT, databaseUrl: database.url, name: 'setup', compiled: false });
  const tenant = await tenantWithSession(setup, database.url).finally(() => setup.stop());
  for (const server of SERVERS) {
    const port = await unusedPort();
    const origin = `http://${HOST}:${port}`;
    const env: Record<string, string> =
      server === 'service'
        ? {
            DATABASE_URL: database.url,
            PORT: String(port),
            HOST,
            BASE_URL: origin,
            ROLE: 'all',
            RATE_LIMIT_API_KEY_PER_MINUTE: '1000000',
          }
        : {
            HOST,
            BARE_PORT: String(port),
            BARE_CREATE_BODY: tenant.createdJson,
            BARE_READ_BODY: tenant.readJson,
            BARE_WORK_US: '0',
            BARE_FLOOR_DATABASE_URL: database.url,
            BARE_FRAMEWORK: server === 'fastify' ? 'fastify' : 'node:http',
          };
    const entry = server === 'service' ? 'src/main.ts' : 'bench/bare-server.ts';
    const request: RouteRequest =
      ROUTE === 'get'
        ? {
            url: `${origin}/verification/v1/sessions/${tenant.sessionId}`,
            init: { headers: tenant.headers },
            status: 200,
          }
        : {
            url: `${origin}/verification/v1/sessions`,
            init: {
              method: 'POST',
              headers: { ...tenant.headers, 'content-type': 'application/json' },
              body: tenant.createBody,
            },
            status: 201,
          };
    results[server] = await count(server, entry, env, request);
    const c = results[server];
    console.log(
      `${server.padEnd(8)} ${c.main_k.toFixed(1).padStart(7)} k instructions per ${ROUTE === 'get' ? 'GET' : 'create'} (all threads ${c.all_k.toFixed(1)} k)` +
        (c.l1_misses === undefined
          ? ''
          : `, ${c.l1_misses.toFixed(0)} first-level and ${c.ll_misses!.toFixed(0)} last-level misses`),
    );
  }
  if (results.service && results.floor)
    console.log(`service ÷ floor, main thread: ${(results.service.main_k / results.floor.main_k).toFixed(2)}`);
  const baseline = ['fastify', 'floor'].find((s) => results[s]);
  const top = TOP > 0 && results.service && baseline ? differences(results.service, results[baseline], TOP) : [];
  if (top.length > 0) {
    console.log(
      `\nwhere the service's instructions differ from ${baseline}'s, per request (own instructions, main thread):`,
    );
    console.log(`${'service'.padStart(9)} ${baseline!.padStart(9)} ${'difference'.padStart(11)}  function`);
    for (const t of top)
      console.log(
        `${t.service.toFixed(0).padStart(9)} ${t.baseline.toFixed(0).padStart(9)} ${t.difference.toFixed(0).padStart(11)}  ${t.function}`,
      );
  }
  if (values.json) {
    const counts = Object.fromEntries(Object.entries(results).map(([name, { functions: _, ...c }]) => [name, c]));
    console.log(JSON.stringify({ ...counts, ...(top.length > 0 ? { top } : {}), requests: REQUESTS, warmup: WARMUP }));
  }
} finally {
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
  await database.drop();
}

/** The one request counted: a session's GET or a create. */
interface RouteRequest {
  url: string;
  init: RequestInit;
  status: number;
}

async function count(name: string, entry: string, env: Record<string, string>, request: RouteRequest): Promise<Counts> {
  const out = join(dir, `${name}.out`);
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      // V8 writes its compiled code to the heap: without this, valgrind runs stale translations.
      '--smc-check=all-non-file',
      '--separate-threads=yes',
      ...(values['cache-sim'] ? ['--cache-sim=yes'] : []),
      `--callgrind-out-file=${out}`,
      process.execPath,
      ...(TOP > 0 ? ['--perf-basic-prof', `--logfile=${join(dir, `${name}-v8.log`)}`, '--no-logfile-per-isolate'] : []),
      '--import',
      'tsx',
      entry,
    ],
    { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const get = async () => {
    const response = await fetch(request.url, request.init);
    const body = await response.text();
    if (response.status !== request.status) throw new Error(`${name} answered ${response.status}: ${body}`);
  };
  try {
    for (let tries = 0; ; tries++) {
      if (child.exitCode !== null) throw new Error(`${name} exited under valgrind:\n${stderr}`);
      if (tries > 600) throw new Error(`${name} did not answer within 5 minutes under valgrind`);
      try {
        await get();
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    for (let i = 0; i < WARMUP; i++) await get();
    control('-i', 'on', child.pid!);
    for (let i = 0; i < REQUESTS; i++) await get();
    control('-i', 'off', child.pid!);
    control('-d', child.pid!);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  // The dump's files: <out>.1-01 for the main thread, .1-02 … for the others.
  const dumped = readdirSync(dir).filter((f) => f.startsWith(`${name}.out.1-`));
  if (dumped.length === 0) throw new Error(`${name}: callgrind wrote no dump`);
  const totals = (file: string) => {
    const text = readFileSync(join(dir, file), 'utf8');
    const events = /^events: (.+)$/m.exec(text)![1].split(' ');
    const numbers = (/^totals: (.+)$/m.exec(text)?.[1] ?? '').split(' ').map(Number);
    return Object.fromEntries(events.map((e, i) => [e, numbers[i] ?? 0]));
  };
  const main = totals(`${name}.out.1-01`);
  const functions = TOP > 0 ? ownInstructions(join(dir, `${name}.out.1-01`), child.pid!) : undefined;
  const all = dumped.map(totals).reduce((sum, t) => sum + (t.Ir ?? 0), 0);
  const perGet = (n: number) => n / REQUESTS;
  return {
    main_k: Math.round(perGet(main.Ir) / 100) / 10,
    all_k: Math.round(perGet(all) / 100) / 10,
    ...(values['cache-sim']
      ? {
          l1_misses: Math.round(perGet(main.I1mr + main.D1mr + main.D1mw)),
          ll_misses: Math.round(perGet(main.ILmr + main.DLmr + main.DLmw)),
        }
      : {}),
    ...(functions ? { functions } : {}),
  };
}

/**
 * Each function's own instructions per GET in a callgrind file, by name: compiled JavaScript named
 * from V8's perf map of that process (moved to `dir` when kept, deleted otherwise).
 */
function ownInstructions(file: string, pid: number): Map<string, number> {
  const mapFile = `/tmp/perf-${pid}.map`;
  const code = readFileSync(mapFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [start, size, ...name] = line.split(' ');
      return { start: parseInt(start, 16), end: parseInt(start, 16) + parseInt(size, 16), name: name.join(' ') };
    })
    .sort((a, b) => a.start - b.start);
  if (values.keep) renameSync(mapFile, join(dir, `${basename(file)}.perf.map`));
  else rmSync(mapFile, { force: true });
  const compiled = (address: number): string => {
    let low = 0;
    let high = code.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (code[mid].start <= address) low = mid + 1;
      else high = mid - 1;
    }
    const found = code[high];
    return found && address < found.end ? found.name : 'compiled code not in the map';
  };
  const annotated = execFileSync('callgrind_annotate', ['--threshold=100', '--show=Ir', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const functions = new Map<string, number>();
  // "  39,400,000 ( 7.25%)  ???:v8::internal::JsonStringifier::SerializeString(…) [/usr/bin/node]"
  for (const line of annotated.split('\n')) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(?:\S*?:)?(.+?)(?: \[[^\]]*\])?$/.exec(line);
    if (!match || match[2] === 'PROGRAM TOTALS') continue;
    const address = /^0x([0-9a-f]+)/.exec(match[2]);
    // C++ names lose their parameters: one name per function, whatever its overloads.
    const name = address ? compiled(parseInt(address[1], 16)) : match[2].replace(/\(.*$/, '');
    functions.set(name, (functions.get(name) ?? 0) + Number(match[1].replaceAll(',', '')) / REQUESTS);
  }
  return functions;
}

/** The `top` functions whose instructions per GET differ the most between the service and a baseline. */
function differences(service: Counts, baseline: Counts, top: number) {
  const names = new Set([...service.functions!.keys(), ...baseline.functions!.keys()]);
  return [...names]
    .map((name) => {
      const s = service.functions!.get(name) ?? 0;
      const b = baseline.functions!.get(name) ?? 0;
      return { function: name, service: Math.round(s), baseline: Math.round(b), difference: Math.round(s - b) };
    })
    .sort((x, y) => Math.abs(y.difference) - Math.abs(x.difference))
    .slice(0, top);
}

function control(...args: Array<string | number>): void {
  execFileSync('callgrind_control', args.map(String), { env: { ...process.env, HOST }, stdio: 'ignore' });
}
