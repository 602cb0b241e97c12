/**
 * Instructions per session GET (SQLite) under valgrind's callgrind, of the service, the floor
 * (bench/bare-server.ts: node:http with only the key's hash and the one read) and the same floor
 * served by Fastify: what each spends in user space per request, counted rather than timed. On a
 * host where the same service's CPU per GET moved from 93 to 155 µs between invocations, the
 * service's count repeated within 2 % over four (bench/README.md, route-instructions.ts); the
 * floor's read 20 % above its usual once, so compare more than one invocation.
 *
 *   node --import tsx bench/route-instructions.ts [--requests 2000] [--warmup 8000]
 *       [--servers service,floor,fastify] [--cache-sim] [--json]
 *
 * Each server runs under `valgrind --tool=callgrind` with instrumentation off while it starts and
 * while `--warmup` GETs let V8 compile its hot code; instrumentation is on for `--requests` GETs
 * sent one at a time, then the counts are dumped. One thread per file (--separate-threads): the
 * figure is the main thread's, where the requests run; all threads' is printed beside it (V8's
 * compiler and GC helpers). Kernel time (the syscalls, the same four per GET for the three
 * servers) is not counted. `--cache-sim` adds callgrind's cache model: first-level and last-level
 * misses per GET. Slow: about a minute per server. Figures are printed, never asserted; with
 * --json the last line is {"service": {"main_k", "all_k", …}, "floor": {…}, "fastify": {…}}.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { unusedPort } from '../test/support/server.ts';
import { benchDatabase, REPO_ROOT, startService, tenantWithSession } from './support.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '8000' },
    servers: { type: 'string', default: 'service,floor,fastify' },
    'cache-sim': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const WARMUP = Number(values.warmup);
if (![REQUESTS, WARMUP].every((n) => Number.isInteger(n) && n > 0))
  throw new Error('--requests and --warmup: positive whole numbers');
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
}

const database = await benchDatabase('sqlite');
const dir = mkdtempSync(join(tmpdir(), 'route-instructions-'));
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
    results[server] = await count(
      server,
      entry,
      env,
      `${origin}/verification/v1/sessions/${tenant.sessionId}`,
      tenant.headers,
    );
    const c = results[server];
    console.log(
      `${server.padEnd(8)} ${c.main_k.toFixed(1).padStart(7)} k instructions per GET (all threads ${c.all_k.toFixed(1)} k)` +
        (c.l1_misses === undefined
          ? ''
          : `, ${c.l1_misses.toFixed(0)} first-level and ${c.ll_misses!.toFixed(0)} last-level misses`),
    );
  }
  if (results.service && results.floor)
    console.log(`service ÷ floor, main thread: ${(results.service.main_k / results.floor.main_k).toFixed(2)}`);
  if (values.json) console.log(JSON.stringify({ ...results, requests: REQUESTS, warmup: WARMUP }));
} finally {
  rmSync(dir, { recursive: true, force: true });
  await database.drop();
}

async function count(
  name: string,
  entry: string,
  env: Record<string, string>,
  url: string,
  headers: Record<string, string>,
): Promise<Counts> {
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
    const response = await fetch(url, { headers });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${name} answered ${response.status}: ${body}`);
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
  };
}

function control(...args: Array<string | number>): void {
  execFileSync('callgrind_control', args.map(String), { env: { ...process.env, HOST }, stdio: 'ignore' });
}
