#!/usr/bin/env node
// Line coverage of src/ from node's test runner (--experimental-test-coverage), with a floor.
//
//   node scripts/coverage.mjs --log test-output/ci.log   # report on a run already made (what CI does)
//   npm run test:coverage                                # the whole suite with coverage, then the report
//   npm run test:coverage -- test/app/config.test.ts         # some files: the report, no floor (a subset
//                                                        # covers less than the suite)
//
// A run collects coverage when MATRICULA_TEST_COVERAGE=1 is set for `npm test` (package.json adds
// --experimental-test-coverage then; node refuses that flag in NODE_OPTIONS), so CI measures the
// same run that tests, not a second one. The test runner prints a table per file in its TAP output;
// this reads it, counts every file under src/ the run never loaded as 0 %, weighs each file by its
// number of lines, prints the least-covered files and the total, and fails below the floor.

import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The floor, in percent of src/'s lines, that the whole suite may not fall below. The one number to
 * adjust: raise it when the suite covers more (CI prints the figure), never lower it to pass.
 *
 * How 65 was chosen (2026-11-26): four files alone (sessions.flow, config, webhooks-delivery, cli;
 * SQLite only, two of them cut off by the 5-minute timeout on a loaded machine) covered 67.8 % of
 * src/. The whole suite covers at least what any part of it covers, so it meets 65 today with room
 * to spare; raise the floor to a few points below the figure of the first whole CI run.
 */
export const COVERAGE_FLOOR_PERCENT = 65;

/** How many of the least-covered files the report lists. */
const LEAST_COVERED = 15;

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The per-file rows of node's coverage table in `log`: { file, line } (line in percent). */
export function parseCoverageTable(log) {
  const start = log.indexOf('# start of coverage report');
  const end = log.indexOf('# end of coverage report', start);
  if (start === -1 || end === -1) return undefined;
  const rows = [];
  for (const raw of log.slice(start, end).split('\n')) {
    const cells = raw.replace(/^#\s?/, '').split('|');
    if (cells.length < 4) continue;
    const file = cells[0].trim();
    const line = Number(cells[1].trim());
    if (file === 'file' || file === 'all files' || !Number.isFinite(line)) continue;
    rows.push({ file, line });
  }
  return rows;
}

function sourceFiles(dir) {
  const files = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

/** Declares something that exists at run time (a file of types only is erased, never loaded). */
const RUNTIME = /^\s*(export\s+)?(default\s+)?(async\s+)?(function|class|const|let|var|enum)\b/m;

/**
 * Every file under src/ with code in it: its lines and covered percentage, 0 for a file the run
 * never loaded. Files of types only are left out: they never run, so no run covers them.
 */
export function srcCoverage(rows) {
  const measured = new Map(rows.map((r) => [r.file.split('\\').join('/'), r.line]));
  return sourceFiles('src').flatMap((file) => {
    const name = relative(ROOT, join(ROOT, file)).split('\\').join('/');
    const text = readFileSync(join(ROOT, file), 'utf8');
    if (!measured.has(name) && !RUNTIME.test(text)) return [];
    const lines = text.split('\n').length;
    return [{ file: name, lines, percent: measured.get(name) ?? 0, loaded: measured.has(name) }];
  });
}

export function report(rows, { floor }) {
  const files = srcCoverage(rows);
  const total = files.reduce((sum, f) => sum + f.lines, 0);
  const covered = files.reduce((sum, f) => sum + (f.lines * f.percent) / 100, 0);
  const percent = total === 0 ? 0 : (100 * covered) / total;
  const least = [...files].sort((a, b) => a.percent - b.percent || b.lines - a.lines).slice(0, LEAST_COVERED);
  const out = [`Least-covered files under src/ (line coverage, ${LEAST_COVERED} of ${files.length}):`];
  for (const f of least)
    out.push(
      `  ${f.percent.toFixed(2).padStart(6)} %  ${String(f.lines).padStart(5)} lines  ${f.file}${f.loaded ? '' : '  (never loaded)'}`,
    );
  out.push(`Line coverage of src/: ${percent.toFixed(2)} % of ${total} lines`);
  let ok = true;
  if (floor) {
    ok = percent >= COVERAGE_FLOOR_PERCENT;
    out.push(
      ok
        ? `Floor: ${COVERAGE_FLOOR_PERCENT} % (scripts/coverage.mjs), met`
        : `FAIL: line coverage ${percent.toFixed(2)} % is below the floor of ${COVERAGE_FLOOR_PERCENT} % (scripts/coverage.mjs)`,
    );
  } else {
    out.push(`Floor not checked: a run of some files covers less than the suite (${COVERAGE_FLOOR_PERCENT} %).`);
  }
  return { ok, percent, text: out.join('\n') };
}

function finish(log, floor) {
  const rows = parseCoverageTable(log);
  if (!rows) {
    console.error('FAIL: no coverage report in the test output (was MATRICULA_TEST_COVERAGE=1 set?)');
    return 1;
  }
  const result = report(rows, { floor });
  (result.ok ? console.log : console.error)(result.text);
  return result.ok ? 0 : 1;
}

async function main(argv) {
  const logAt = argv.indexOf('--log');
  if (logAt !== -1) {
    if (!argv[logAt + 1]) throw new Error('--log needs a file');
    return finish(readFileSync(argv[logAt + 1], 'utf8'), true);
  }
  // A run of its own: `npm test` with coverage, or the given test files the same way.
  const files = argv.filter((a) => a !== '--');
  const command = files.length
    ? [
        process.execPath,
        [
          '--import',
          'tsx',
          '--test',
          '--experimental-test-coverage',
          '--test-concurrency=2',
          '--test-timeout=300000',
          '--test-reporter=tap',
          ...files,
        ],
      ]
    : ['npm', ['test']];
  mkdirSync(join(ROOT, 'test-output'), { recursive: true });
  const logFile = createWriteStream(join(ROOT, 'test-output', 'coverage.log'));
  let log = '';
  const child = spawn(command[0], command[1], {
    cwd: ROOT,
    env: { ...process.env, MATRICULA_TEST_COVERAGE: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout.on('data', (chunk) => {
    log += chunk.toString();
    process.stdout.write(chunk);
    logFile.write(chunk);
  });
  const code = await new Promise((resolve) => child.once('exit', (c) => resolve(c ?? 1)));
  logFile.end();
  const reported = finish(log, files.length === 0);
  return code !== 0 ? code : reported;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
}
