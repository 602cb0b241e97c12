import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { coverageEnv } from '../../scripts/test.ts';

/**
 * A coverage run's processes (scripts/test.ts `coverageEnv`): each writes V8's coverage, and V8
 * records whether each block ran, not how often (scripts/v8-coverage-binary.mjs), which costs the
 * suite less CPU. A process started with the run's environment is looked at from outside.
 */

/** A function called five times, with a branch it never takes; its coverage in the file node writes. */
const PROGRAM = `function fiveTimes(i) {\n  if (i > 10) {\n    return 2;\n  }\n  return 1;\n}\nlet n = 0;\nfor (let i = 0; i < 5; i++) n += fiveTimes(i);\nconsole.log(n);\n`;

interface Coverage {
  result: Array<{ url: string; functions: Array<{ functionName: string; ranges: Array<{ count: number }> }> }>;
}

/**
 * Runs PROGRAM with `env` and returns the count V8 wrote for `fiveTimes`, once it has checked that
 * the coverage is of blocks: the branch never taken is a range of its own, counted 0 (coverage of
 * whole functions would count its lines as run).
 */
function countOfFiveTimes(env: NodeJS.ProcessEnv, dir: string, program: string): number {
  const out = spawnSync(process.execPath, [program], { env, encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
  assert.equal(out.stdout.trim(), '5');
  const files = readdirSync(dir).filter((name) => name.endsWith('.json'));
  assert.equal(files.length, 1, 'one process, one coverage file');
  const coverage = JSON.parse(readFileSync(join(dir, files[0]!), 'utf8')) as Coverage;
  const script = coverage.result.find((entry) => entry.url === pathToFileURL(program).href);
  assert.ok(script, 'the program is in its coverage');
  const fn = script.functions.find((f) => f.functionName === 'fiveTimes');
  assert.ok(fn, 'fiveTimes is in its coverage');
  assert.ok(
    fn.ranges.slice(1).some((range) => range.count === 0),
    `the branch never taken is a block counted 0: ${JSON.stringify(fn.ranges)}`,
  );
  return fn.ranges[0]!.count;
}

describe('coverage runs record whether code ran', () => {
  test('a process of the run records a block that ran five times as run, once', () => {
    const work = mkdtempSync(join(tmpdir(), 'matricula-coverage-mode-'));
    try {
      const program = join(work, 'program.mjs');
      writeFileSync(program, PROGRAM);
      const plainDir = join(work, 'plain');
      const runDir = join(work, 'run');
      const base = { ...process.env, NODE_OPTIONS: '' };
      // What NODE_V8_COVERAGE alone does: counts.
      assert.equal(countOfFiveTimes({ ...base, NODE_V8_COVERAGE: plainDir }, plainDir, program), 5);
      assert.equal(countOfFiveTimes(coverageEnv(base, runDir), runDir, program), 1);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('keeps the NODE_OPTIONS it is given, and adds the preload after them', () => {
    const env = coverageEnv({ NODE_OPTIONS: '--max-old-space-size=512', KEEP: 'x' }, '/tmp/v8');
    assert.equal(env.NODE_V8_COVERAGE, '/tmp/v8');
    assert.equal(env.KEEP, 'x');
    assert.match(
      env.NODE_OPTIONS!,
      /^--max-old-space-size=512 --import=file:\/\/\S+\/scripts\/v8-coverage-binary\.mjs$/,
    );
    assert.match(coverageEnv({}, '/tmp/v8').NODE_OPTIONS!, /^--import=file:\/\/\S+v8-coverage-binary\.mjs$/);
  });
});
