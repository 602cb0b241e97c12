/**
 * `npm test`: node's test runner, via tsx, over every suite one folder below test/
 * (`test/<folder>/<name>.test.ts`), with fewer processes than files.
 *
 * Why: the runner starts one process per file it is given, and each process pays about 3 s of CPU
 * before its first test (node, tsx, and importing the service under tsx), about two thirds of the
 * whole suite's CPU on a two-core machine. So the suites of one folder run in a few shared
 * processes: a generated file under test-output/bundles/ imports them in order, and their tests run
 * one after another in that process, each suite with its own database schema or file as before.
 *
 * A suite runs in a process of its own when it declares top-level hooks (`before(`, `after(`, … at
 * the start of a line: in a shared process they would attach to every suite there) or carries the
 * line `// test: own process` (with its reason after a colon or on the next lines).
 *
 *   npm test                          every suite, bundled (node --import tsx scripts/test.ts)
 *   npm test -- test/store/x.test.ts  the files named, each in its own process, as node would
 *   npm test -- --test-name-pattern=X flags are passed to node's runner
 *
 * Environment: MATRICULA_TEST_COVERAGE=1 has every process write V8's coverage to
 * test-output/coverage/v8/ (scripts/coverage.ts reports it), whether each block ran
 * (scripts/v8-coverage-binary.mjs);
 * MATRICULA_TEST_CONCURRENCY (default 2) is how many processes run at once;
 * MATRICULA_TEST_BUNDLE (default 8) is the most suites one process runs;
 * MATRICULA_TEST_WATCHDOG_S (default 600) is how long a process may run before its watchdog
 * reports and fails it (test/support/watchdog.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TEST = join(ROOT, 'test');
const BUNDLES = join(ROOT, 'test-output', 'bundles');
/** Imported first by every generated file: a process past its budget says why (test/support/watchdog.ts). */
const WATCHDOG = join(TEST, 'support', 'watchdog.ts');
const V8_COVERAGE = join(ROOT, 'test-output', 'coverage', 'v8');
/** Preloaded by every process of a coverage run (coverageEnv). */
const COVERAGE_BINARY = join(ROOT, 'scripts', 'v8-coverage-binary.mjs');
/** Where each test process writes its CPU time as it exits (test/support/watchdog.ts). */
const CPU_LOG = join(ROOT, 'test-output', 'process-cpu.tsv');
const CONCURRENCY = Number(process.env.MATRICULA_TEST_CONCURRENCY ?? 2);
const BUNDLE_SIZE = Number(process.env.MATRICULA_TEST_BUNDLE ?? 8);

/**
 * The order processes start in, longest first, so that the run does not end with one long process
 * alone on a machine of two cores: the folders whose suites took the most time per process (Groth16
 * proving, flows end to end, browsers, spawned CLIs and servers; measured 2026-11-26), then the
 * others by name.
 */
const FIRST = ['proofs', 'integration', 'e2e', 'cli', 'routes', 'webhooks', 'app', 'http', 'domain', 'services'];

/** True when the suite must not share its process (see the header). */
export function needsOwnProcess(source: string): boolean {
  return /^(before|after|beforeEach|afterEach)\(/m.test(source) || /^\/\/ test: own process\b/m.test(source);
}

/** Every suite one folder below test/, by folder, in name order. */
export function suitesByFolder(testDir = TEST): Map<string, string[]> {
  const folders = readdirSync(testDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  const byFolder = new Map<string, string[]>();
  for (const folder of folders) {
    const files = readdirSync(join(testDir, folder))
      .filter((name) => name.endsWith('.test.ts'))
      .sort()
      .map((name) => join(testDir, folder, name));
    if (files.length > 0) byFolder.set(folder, files);
  }
  return byFolder;
}

/**
 * What the runner is given: bundles of at most `size` suites of one folder, and the suites that
 * need their own process, folders of FIRST first.
 */
export interface Entry {
  /** The bundle's name, or the suite's path when it runs alone. */
  name: string;
  files: string[];
}

export function plan(
  byFolder: Map<string, string[]>,
  size = BUNDLE_SIZE,
  read = (file: string) => readFileSync(file, 'utf8'),
): Entry[] {
  const order = [...byFolder.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const entries: Entry[] = [];
  for (const folder of order) {
    const shared: string[] = [];
    for (const file of byFolder.get(folder)!) {
      if (needsOwnProcess(read(file))) entries.push({ name: relative(ROOT, file), files: [file] });
      else shared.push(file);
    }
    const count = Math.ceil(shared.length / size);
    for (let k = 0; k < count; k++) {
      // Spread evenly: 9 suites at size 8 make bundles of 5 and 4, not 8 and 1.
      const files = shared.filter((_, i) => i % count === k);
      entries.push({ name: `${folder}-${k + 1}`, files });
    }
  }
  return entries;
}

function rank(folder: string): number {
  const i = FIRST.indexOf(folder);
  return i === -1 ? FIRST.length : i;
}

/**
 * Writes one file per entry that imports its suites, a suite that runs alone included, named in
 * the plan's order (`01-…`): node's runner sorts the files it is given by name, which put the
 * suites that run alone (`test/…`) after every bundle (`test-output/…`), the longest of them last.
 * Each file imports `watchdog` first: a process that hangs says why and fails (test/support/watchdog.ts).
 */
export function bundleFiles(
  entries: Entry[],
  dir = BUNDLES,
  watchdog = WATCHDOG,
): Array<{ path: string; source: string }> {
  const width = String(entries.length).length;
  return entries.map((entry, i) => {
    const name = entry.name
      .replace(/^test\//, '')
      .replace(/\.test\.ts$/, '')
      .replace(/[\\/]/g, '-');
    const path = join(dir, `${String(i + 1).padStart(width, '0')}-${name}.test.ts`);
    const lines = [watchdog, ...entry.files].map((file) => `import '${relative(dir, file).split('\\').join('/')}';`);
    const what =
      entry.files.length === 1 ? 'this suite runs in a process of its own' : 'these suites share one process';
    return { path, source: `// Generated by scripts/test.ts: ${what}.\n${lines.join('\n')}\n` };
  });
}

function materialize(entries: Entry[]): string[] {
  rmSync(BUNDLES, { recursive: true, force: true });
  mkdirSync(BUNDLES, { recursive: true });
  return bundleFiles(entries).map(({ path, source }) => {
    writeFileSync(path, source);
    return path;
  });
}

/**
 * The environment of a coverage run, inherited by every process it starts: node writes each one's
 * coverage to `dir` as it exits (NODE_V8_COVERAGE), and each one preloads
 * scripts/v8-coverage-binary.mjs, which has V8 record whether each block ran rather than how often.
 */
export function coverageEnv(env: NodeJS.ProcessEnv, dir: string): NodeJS.ProcessEnv {
  const preload = `--import=${pathToFileURL(COVERAGE_BINARY).href}`;
  return {
    ...env,
    NODE_V8_COVERAGE: dir,
    NODE_OPTIONS: env.NODE_OPTIONS ? `${env.NODE_OPTIONS} ${preload}` : preload,
  };
}

function main(): void {
  // Flags go to node's runner as they are (`npm test -- --test-name-pattern=…`); files replace the bundles.
  const flags = process.argv.slice(2).filter((arg) => arg.startsWith('-'));
  const named = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  const files = named.length > 0 ? named : materialize(plan(suitesByFolder()));
  const args = [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${CONCURRENCY}`,
    '--test-timeout=900000',
    '--test-reporter=tap',
    ...flags,
    ...files,
  ];
  let env: NodeJS.ProcessEnv = { ...process.env };
  if (process.env.MATRICULA_TEST_COVERAGE) {
    rmSync(V8_COVERAGE, { recursive: true, force: true });
    env = coverageEnv(env, V8_COVERAGE);
  }
  // Each process notes its wall and CPU time as it exits (test/support/watchdog.ts); summed up below.
  rmSync(CPU_LOG, { force: true });
  env.MATRICULA_TEST_CPU_LOG = CPU_LOG;
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: 'inherit', env });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal as NodeJS.Signals));
  child.on('exit', (code, signal) => {
    if (existsSync(CPU_LOG)) console.log(cpuSummary(readFileSync(CPU_LOG, 'utf8')).join('\n'));
    process.exit(code ?? (signal ? 1 : 0));
  });
}

/**
 * The run's CPU by process, as TAP comments: the total, then the `top` costliest processes (own
 * CPU and their children's: the servers, CLIs and browsers they started), from the lines each
 * wrote as it exited (`file, wall s, own CPU s, children's CPU s`, tab-separated).
 */
export function cpuSummary(log: string, top = 10): string[] {
  const rows = log
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const [file, wall, own, children] = line.split('\t');
      return { file, wall: Number(wall), own: Number(own), children: Number(children) };
    })
    .sort((a, b) => b.own + b.children - (a.own + a.children));
  const total = rows.reduce((sum, row) => sum + row.own + row.children, 0);
  return [
    `# CPU of the test processes: ${total.toFixed(0)} s in ${rows.length} processes (their children included); the costliest:`,
    ...rows
      .slice(0, top)
      .map(
        (row) =>
          `#   ${(row.own + row.children).toFixed(1).padStart(6)} s  ${row.file} (own ${row.own.toFixed(1)} s, children ${row.children.toFixed(1)} s, wall ${row.wall.toFixed(1)} s)`,
      ),
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
