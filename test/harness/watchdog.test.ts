import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

function runSuite(body: string, budgetS: number) {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-watchdog-'));
  try {
    const file = join(dir, 'suite.test.ts');
    writeFileSync(file, `import ${JSON.stringify(WATCHDOG)};\nimport { test } from 'node:test';\n${body}\n`);
    return spawnSync(process.execPath, ['--import', 'tsx', file], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, MATRICULA_TEST_WATCHDOG_S: String(budgetS), NODE_V8_COVERAGE: '' },
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
