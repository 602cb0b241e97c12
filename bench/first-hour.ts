/**
 * The first hour, timed (issue 31, goal 11): how long a new integrator waits, from `npm ci` done.
 *
 *   node --import tsx bench/first-hour.ts [--rounds 3] [--json]
 *
 * Each round, on a fresh SQLite database (created and migrated by the start, as on a first run):
 * - `node`: a bare node:http server started as a process and answering its first request — the
 *   floor any Node.js service starts above, measured in the same run;
 * - `npm start`: `npm start` spawned until `/readyz` answers 200;
 * - `compiled`: `node dist/main.js` until `/readyz` answers 200 (built first, outside the timing,
 *   when dist/ is missing);
 * - `walk-through`: the README's walk-through, from `npm start` spawned to the first session read
 *   back `verified: true`: `./bin/matricula org create --json`, a session created over HTTP,
 *   `./bin/matricula wallet present --qr … --format groth16`, the session read.
 * Medians of the rounds are printed; with `--json` the last line is one object.
 * Goals: walk-through under 20 s, `npm start` under 3 s, compiled under 1.5 s.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { unusedPort } from '../test/support/server.ts';
import { REPO_ROOT } from './support.ts';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, json: { type: 'boolean', default: false } },
});
const ROUNDS = Number(values.rounds);

interface Started {
  child: ChildProcess;
  origin: string;
  dir: string;
}

function start(command: string[], env: Record<string, string>, port: number): Started {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-first-hour-'));
  const child = spawn(command[0], command.slice(1), {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: `sqlite:${join(dir, 'matricula.sqlite')}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return { child, origin: `http://127.0.0.1:${port}`, dir };
}

async function stop(started: Started): Promise<void> {
  if (started.child.exitCode === null) {
    const exited = new Promise((resolve) => started.child.once('exit', resolve));
    started.child.kill('SIGTERM');
    await exited;
  }
  rmSync(started.dir, { recursive: true, force: true });
}

/** Polls `url` every 10 ms until it answers 200; the polling interval bounds the error of the figure. */
async function until200(url: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the process exited (${child.exitCode}) before ${url} answered`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function timeToReady(command: string[], path: string): Promise<number> {
  const port = await unusedPort();
  const t0 = performance.now();
  const started = start(command, {}, port);
  try {
    await until200(`${started.origin}${path}`, started.child);
    return performance.now() - t0;
  } finally {
    await stop(started);
  }
}

function cli(args: string[], env: Record<string, string>): string {
  const out = spawnSync(join(REPO_ROOT, 'bin/matricula'), args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (out.status !== 0) throw new Error(`matricula ${args[0]} failed: ${out.stderr}`);
  return out.stdout;
}

async function walkThrough(): Promise<{ total: number; ready: number }> {
  const port = await unusedPort();
  const t0 = performance.now();
  const started = start(['npm', 'start', '--silent'], {}, port);
  try {
    await until200(`${started.origin}/readyz`, started.child);
    const ready = performance.now() - t0;
    const env = {
      DATABASE_URL: `sqlite:${join(started.dir, 'matricula.sqlite')}`,
      MATRICULA_BASE_URL: started.origin,
      LOG_LEVEL: 'warn',
    };
    const org = JSON.parse(cli(['org', 'create', '--name', 'Acme Books', '--json'], env)) as {
      application: { id: string };
      apiKey: { rawSecret: string };
    };
    const auth = { authorization: `Bearer ${org.apiKey.rawSecret}`, 'content-type': 'application/json' };
    const created = await fetch(`${started.origin}/verification/v1/sessions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        appId: org.application.id,
        purpose: '10% student discount',
        requiredClaims: ['is_active_student', 'university_domain'],
      }),
    });
    const session = ((await created.json()) as { data: { sessionId: string; qrPayload: string } }).data;
    cli(
      ['wallet', 'present', '--qr', session.qrPayload, '--format', 'groth16', '--university', 'pruebas.example'],
      env,
    );
    const read = await fetch(`${started.origin}/verification/v1/sessions/${session.sessionId}`, { headers: auth });
    const result = ((await read.json()) as { data: { result?: { verified?: boolean } } }).data.result;
    if (result?.verified !== true) throw new Error(`the session did not verify: ${JSON.stringify(result)}`);
    return { total: performance.now() - t0, ready };
  } finally {
    await stop(started);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  if (!existsSync(join(REPO_ROOT, 'dist/main.js'))) {
    const built = spawnSync('npm', ['run', 'build', '--silent'], { cwd: REPO_ROOT, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  const loadBefore = loadavg();
  const bare = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')`;
  const figures: Record<string, number[]> = { node: [], npm_start: [], compiled: [], walk_through: [] };
  for (let round = 0; round < ROUNDS; round++) {
    figures.node.push(await timeToReady([process.execPath, '-e', bare], '/'));
    figures.npm_start.push(await timeToReady(['npm', 'start', '--silent'], '/readyz'));
    figures.compiled.push(await timeToReady([process.execPath, 'dist/main.js'], '/readyz'));
    figures.walk_through.push((await walkThrough()).total);
  }
  const loadAfter = loadavg();
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
  console.log(
    `bench/first-hour.ts  rounds=${ROUNDS}  node=${process.version}  load ${load(loadBefore)} → ${load(loadAfter)}`,
  );
  const goals: Record<string, number | undefined> = { npm_start: 3000, compiled: 1500, walk_through: 20000 };
  const out: Record<string, number> = {};
  for (const [name, xs] of Object.entries(figures)) {
    const m = median(xs);
    out[`${name}_ms`] = Math.round(m);
    const goal = goals[name];
    console.log(
      `${name.padEnd(14)} median ${m.toFixed(0).padStart(6)} ms  (${xs.map((x) => x.toFixed(0)).join(', ')})${goal ? `  goal < ${goal} ms` : ''}`,
    );
  }
  if (values.json) console.log(JSON.stringify({ ...out, load_before: loadBefore[0], load_after: loadAfter[0] }));
}

await main();
