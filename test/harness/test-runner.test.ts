import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { bundleFiles, cpuSummary, needsOwnProcess, plan, suitesByFolder } from '../../scripts/test.ts';

/**
 * `npm test` (scripts/test.ts) runs the suites of a folder in a few shared processes. What it must
 * never do: leave a suite out, run one twice, or put a suite whose top-level hooks would attach to
 * every suite of a shared process beside others.
 */

const ROOT = join(import.meta.dirname, '..', '..');

test('npm test is the bundling runner', () => {
  const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { test: string } }).scripts
    .test;
  assert.equal(script, 'node --import tsx scripts/test.ts');
});

test('a suite with top-level hooks or the marker runs alone; hooks inside a suite do not count', () => {
  assert.equal(needsOwnProcess("import { before } from 'node:test';\nbefore(async () => {});\n"), true);
  assert.equal(needsOwnProcess('afterEach(() => undefined);\n'), true);
  assert.equal(needsOwnProcess('// test: own process: it sets a process-wide switch\n'), true);
  assert.equal(needsOwnProcess("describe('x', () => {\n  before(async () => {});\n  after(() => {});\n});\n"), false);
  assert.equal(needsOwnProcess('// beforehand, nothing\nconst before_ = 1;\n'), false);
});

test('every suite of every folder runs exactly once, bundles within their folder and size', () => {
  const byFolder = new Map([
    ['store', ['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8', 's9'].map((n) => `/r/test/store/${n}.test.ts`)],
    ['e2e', ['a', 'b'].map((n) => `/r/test/e2e/${n}.test.ts`)],
    ['domain', ['hooks', 'plain'].map((n) => `/r/test/domain/${n}.test.ts`)],
  ]);
  const sources: Record<string, string> = { '/r/test/domain/hooks.test.ts': 'after(() => {});\n' };
  const entries = plan(byFolder, 4, (file) => sources[file] ?? "test('x', () => {});\n");

  const all = entries.flatMap((entry) => entry.files).sort();
  assert.deepEqual(all, [...byFolder.values()].flat().sort(), 'each suite once');
  for (const entry of entries) {
    assert.ok(entry.files.length <= 4, `${entry.name} holds at most the bundle size`);
    assert.equal(new Set(entry.files.map((file) => file.split('/').at(-2))).size, 1, `${entry.name}: one folder`);
  }
  assert.deepEqual(
    entries.find((entry) => entry.files.includes('/r/test/domain/hooks.test.ts'))?.files,
    ['/r/test/domain/hooks.test.ts'],
    'the suite with a top-level hook is alone',
  );
  // Nine suites at four a process: three bundles of three, not 4, 4 and 1.
  assert.deepEqual(
    entries.filter((entry) => entry.name.startsWith('store-')).map((entry) => entry.files.length),
    [3, 3, 3],
  );
  // The folders whose processes run longest start first (browsers before domain and store).
  assert.equal(entries[0]!.files[0]!.includes('/e2e/'), true);
});

test('the runner sees exactly the suites one folder below test/', () => {
  const found = [...suitesByFolder().values()].flat().map((file) => file.slice(ROOT.length + 1));
  assert.ok(found.includes('test/harness/test-runner.test.ts'));
  assert.ok(found.every((file) => /^test\/[^/]+\/[^/]+\.test\.ts$/.test(file)));
  const planned = plan(suitesByFolder()).flatMap((entry) => entry.files);
  assert.equal(planned.length, found.length);
});

test("the runner's files sort by name into the plan's order, a suite that runs alone included", () => {
  // node's runner sorts the files it is given by name: the plan's order must survive that.
  const entries = [
    { name: 'test/proofs/slow.test.ts', files: ['/r/test/proofs/slow.test.ts'] },
    { name: 'proofs-1', files: ['/r/test/proofs/a.test.ts', '/r/test/proofs/b.test.ts'] },
    { name: 'app-1', files: ['/r/test/app/c.test.ts'] },
  ];
  const files = bundleFiles(entries, '/r/test-output/bundles', '/r/test/support/watchdog.ts');
  const paths = files.map((file) => file.path);
  assert.deepEqual([...paths].sort(), paths);
  assert.ok(paths.every((path) => path.startsWith('/r/test-output/bundles/')));
  // Every file starts the watchdog first (test/support/watchdog.ts), then its suites in order.
  assert.ok(files.every((file) => file.source.split('\n')[1] === "import '../../test/support/watchdog.ts';"));
  assert.equal(files[0]!.source.split('\n')[2], "import '../../test/proofs/slow.test.ts';");
  assert.deepEqual(files[1]!.source.split('\n').slice(2, 4), [
    "import '../../test/proofs/a.test.ts';",
    "import '../../test/proofs/b.test.ts';",
  ]);
});

test('the CPU summary totals every process and lists the costliest first, children included', () => {
  const log = ['a.test.ts\t10.0\t5.0\t0.0', 'b.test.ts\t20.0\t2.0\t9.5', 'c.test.ts\t1.0\t1.0\t0.0', ''].join('\n');
  assert.deepEqual(cpuSummary(log, 2), [
    '# CPU of the test processes: 18 s in 3 processes (their children included); the costliest:',
    '#     11.5 s  b.test.ts (own 2.0 s, children 9.5 s, wall 20.0 s)',
    '#      5.0 s  a.test.ts (own 5.0 s, children 0.0 s, wall 10.0 s)',
  ]);
});
