import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { COVERAGE_FLOOR_PERCENT, projectCoverage, report, srcCoverage, type Summary } from '../../scripts/coverage.ts';

/**
 * CI's coverage figure (scripts/coverage.ts): which files count, how the total is weighed, and the
 * floor that fails the run. A figure that counted the wrong files, or a floor that never failed,
 * would let coverage fall unnoticed.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const row = (total: number, covered: number) => ({
  lines: { total, covered, pct: total === 0 ? 100 : (100 * covered) / total },
});

const sources: Record<string, string> = {
  'src/domain/run.ts': 'export function run() {}\n',
  'src/domain/never.ts': 'export const never = 1;\n',
  'src/domain/types.ts': 'export interface Only {\n  a: string;\n}\n',
};

const summary: Summary = {
  total: row(1000, 1000),
  [join(ROOT, 'src/domain/run.ts')]: row(100, 90),
  [join(ROOT, 'src/domain/never.ts')]: row(100, 0),
  [join(ROOT, 'src/domain/types.ts')]: row(50, 0),
  [join(ROOT, 'src/portal/assets/wallet.js')]: row(300, 10),
  [join(ROOT, 'bench/scale.ts')]: row(500, 0),
};

test('counts src/ files node runs, a never-run one at 0 %; not types, browser scripts or others', () => {
  const files = srcCoverage(summary, (file) => sources[file]!);
  assert.deepEqual(files.map((f) => f.file).sort(), ['src/domain/never.ts', 'src/domain/run.ts']);
  const { text } = report(files, { floor: false });
  assert.match(text, /Line coverage of src\/: 45\.00 % of 200 lines/);
  assert.match(text, /0\.00 % {2,}100 lines {2}src\/domain\/never\.ts {2}\(never run\)/);
  assert.match(text, /Floor not checked/);
});

test('the floor fails a run below it and passes one at it', () => {
  const at = (percent: number) => [{ file: 'src/a.ts', lines: 10_000, covered: percent * 100, percent }];
  const below = report(at(COVERAGE_FLOOR_PERCENT - 0.01), { floor: true });
  assert.equal(below.ok, false);
  assert.match(below.text, /FAIL: line coverage .* below the floor/);
  assert.equal(report(at(COVERAGE_FLOOR_PERCENT), { floor: true }).ok, true);
});

test("the report reads the project's scripts and their source maps, nothing else", () => {
  const url = (path: string) => pathToFileURL(join('/repo', path)).href;
  const script = (path: string) => ({ url: url(path), functions: [] });
  const coverage = {
    timestamp: 1,
    result: [
      script('src/domain/run.ts'),
      script('dist/domain/run.js'),
      { url: 'node:internal/fs/utils', functions: [] },
      script('node_modules/fastify/fastify.js'),
      script('srcs/other.ts'),
      script('test/domain/run.test.ts'),
    ],
    'source-map-cache': { [url('src/domain/run.ts')]: { data: 1 }, [url('node_modules/x/y.js')]: { data: 2 } },
  };
  const kept = projectCoverage(coverage, '/repo');
  assert.deepEqual(
    kept.result.map((s) => s.url),
    [url('src/domain/run.ts'), url('dist/domain/run.js')],
  );
  assert.deepEqual(kept['source-map-cache'], { [url('src/domain/run.ts')]: { data: 1 } });
  assert.equal(kept.timestamp, 1);
  assert.equal('source-map-cache' in projectCoverage({ result: [] }, '/repo'), false);
});
