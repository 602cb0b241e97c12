/**
 * A test process that runs past its budget says where it stands, then ends with an error. Every
 * file scripts/test.ts generates imports this first.
 *
 * Why: node's runner only ends a file at `--test-timeout` (15 minutes), and then says nothing but
 * "test timed out": which test was running, what kept the process alive, what its database
 * connections waited for, all lost. Two bundles once hung so in CI, side by side, and nothing
 * they printed told why. Here, after MATRICULA_TEST_WATCHDOG_S seconds (default 600: well past
 * any bundle's length, well before the runner's timeout), the process prints the test it is in, its
 * open handles and every other connection to the test database with what it waits for and who
 * blocks it, and exits with status 1. The timer is unref'd: it never keeps a finished process alive.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { beforeEach } from 'node:test';
import pg from 'pg';

const BUDGET_S = Number(process.env.MATRICULA_TEST_WATCHDOG_S ?? 600);
const started = Date.now();
let current = { name: '(none yet)', since: started };

beforeEach((t) => {
  current = { name: t.name, since: Date.now() };
});

/** Every other backend of the test database: state, wait, blocking pids, the statement's start. */
async function databaseActivity(url: string): Promise<string[]> {
  const client = new pg.Client({
    connectionString: url,
    application_name: 'matricula-test-watchdog',
    connectionTimeoutMillis: 5_000,
    query_timeout: 5_000,
  });
  try {
    await client.connect();
    const { rows } = await client.query<Record<string, unknown>>(
      `select pid, application_name, state, wait_event_type, wait_event, pg_blocking_pids(pid) as blocked_by,
              now() - xact_start as in_transaction, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) as query
       from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() order by pid`,
    );
    return rows.map((row) => JSON.stringify(row));
  } catch (err) {
    return [`(the database could not be read: ${(err as Error).message})`];
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function report(now = Date.now()): Promise<string> {
  const lines = [
    `watchdog: this test process has run ${Math.round((now - started) / 1000)} s, past its budget of ${BUDGET_S} s`,
    `the test running: ${current.name} (for ${Math.round((now - current.since) / 1000)} s)`,
    `open handles: ${process.getActiveResourcesInfo().join(', ')}`,
  ];
  // The harness names this process's connections matricula-test-<pid>… (test/support/harness.ts).
  const url = process.env.TEST_DATABASE_URL;
  if (url)
    lines.push(
      `the test database’s other connections (this process's are named matricula-test-${process.pid}…):`,
      ...(await databaseActivity(url)),
    );
  return lines.join('\n');
}

setTimeout(() => {
  void report().then((text) => {
    process.stderr.write(`${text}\n`);
    process.exit(1);
  });
}, BUDGET_S * 1000).unref();

/**
 * Where each process writes, as it exits, its wall time and the CPU time it and the children it
 * waited for spent (the servers, CLIs and browsers it started): scripts/test.ts prints the
 * costliest once the run ends, so that a slow CI run says which bundles to look at.
 */
export const CPU_LOG = process.env.MATRICULA_TEST_CPU_LOG;

/** CPU seconds of the children this process has waited for (/proc: cutime and cstime, in ticks of 1/100 s). */
function childrenCpuSeconds(): number {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    // After the command: state is field 3, so cutime (16) and cstime (17) are at 13 and 14.
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

if (CPU_LOG)
  process.on('exit', () => {
    const { user, system } = process.cpuUsage();
    const line = [
      basename(process.argv[1] ?? '?'),
      ((Date.now() - started) / 1000).toFixed(1),
      ((user + system) / 1e6).toFixed(1),
      childrenCpuSeconds().toFixed(1),
    ].join('\t');
    appendFileSync(CPU_LOG, `${line}\n`);
  });
