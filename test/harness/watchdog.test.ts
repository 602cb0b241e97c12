import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * test/support/watchdog.ts, which every generated test file imports first: a process past its
 * budget names the test it is in, its open handles and the test database's connections, and exits
 * with status 1; a process that finishes in time is not held open by it.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WATCHDOG = fileURLToPath(new URL('../support/watchdog.ts', import.meta.url));

function runSuite(body: string, budgetS: number, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-watchdog-'));
  try {
    const file = join(dir, 'suite.test.ts');
    writeFileSync(file, `import ${JSON.stringify(WATCHDOG)};\nimport { test } from 'node:test';\n${body}\n`);
    return spawnSync(process.execPath, ['--import', 'tsx', file], {
      cwd: ROOT,
      encoding: 'utf8',
      // The run's own CPU log is not this suite's: a child writes one only when the test says where.
      env: {
        ...process.env,
        MATRICULA_TEST_WATCHDOG_S: String(budgetS),
        NODE_V8_COVERAGE: '',
        MATRICULA_TEST_CPU_LOG: '',
        ...env,
      },
      timeout: 60_000,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a process past its budget names its test, handles and connections, and fails', () => {
  const ran = runSuite(
    `test('quick', () => {});\ntest('hangs for ever', () => new Promise(() => setInterval(() => {}, 1_000)));`,
    0.5,
  );
  assert.equal(ran.status, 1, ran.stdout + ran.stderr);
  assert.match(ran.stderr, /^watchdog: this test process has run \d+ s, past its budget of 0\.5 s$/m);
  assert.match(ran.stderr, /^the test running: hangs for ever \(for \d+ s\)$/m);
  assert.match(ran.stderr, /^open handles: .*Timeout/m);
  if (process.env.TEST_DATABASE_URL) {
    assert.match(
      ran.stderr,
      /^the test database’s other connections \(this process's are named matricula-test-\d+…\):$/m,
    );
    assert.doesNotMatch(ran.stderr, /could not be read/);
  }
});

test('a process that finishes in time ends at once, untouched', () => {
  const ran = runSuite(`test('quick', () => {});`, 50);
  assert.equal(ran.status, 0, ran.stdout + ran.stderr);
  assert.equal(ran.signal, null, 'it ended before the spawn timeout');
  assert.doesNotMatch(ran.stderr, /watchdog/);
});

test('a process notes its wall time, its CPU and its children’s as it exits, when asked', () => {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-cpu-log-'));
  try {
    const log = join(dir, 'cpu.tsv');
    // A child that spends at least 0.3 s of CPU, waited for: the children's column counts it. Its
    // loop reads its own CPU time, not the clock: on a loaded machine (CI, four suites at once)
    // 0.3 s of wall time held 0.1 s of CPU.
    const busyChild = `spawnSync(process.execPath, ['-e', 'const s = process.cpuUsage(); while (process.cpuUsage(s).user < 300000);'])`;
    const ran = runSuite(
      `import { spawnSync } from 'node:child_process';\ntest('spawns', () => { ${busyChild}; });`,
      50,
      { MATRICULA_TEST_CPU_LOG: log },
    );
    assert.equal(ran.status, 0, ran.stdout + ran.stderr);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1);
    const [file, wall, own, children] = lines[0].split('\t');
    assert.equal(file, 'suite.test.ts');
    assert.ok(Number(wall) > 0.3, lines[0]);
    assert.ok(Number(own) > 0, lines[0]);
    assert.ok(Number(children) >= 0.3, lines[0]);
    // A process that starts no child notes none.
    rmSync(log);
    assert.equal(runSuite(`test('quick', () => {});`, 50, { MATRICULA_TEST_CPU_LOG: log }).status, 0);
    assert.equal(Number(readFileSync(log, 'utf8').split('\t')[3]), 0);
    // Without the variable, nothing is written.
    rmSync(log);
    assert.equal(runSuite(`test('quick', () => {});`, 50).status, 0);
    assert.equal(existsSync(log), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
