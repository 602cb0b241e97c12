import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

/**
 * `npm test` (scripts/test.ts) runs `test/*\/*.test.ts`: a suite written directly in `test/`, or one level deeper,
 * would never run and never fail. Every suite sits in a folder that names a layer of `src/` or a
 * kind of suite across layers (CONTRIBUTING.md, "Layout").
 */

const TEST = join(import.meta.dirname, '..');
const ROOT = join(TEST, '..');
const SRC_LAYERS = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const ACROSS_LAYERS = ['app', 'integration', 'e2e', 'sdk', 'docs', 'harness'];
const HELPERS = ['support', 'fixtures'];

const suitesIn = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.test.ts'));

test('no suite sits directly in test/, where npm test would not find it', () => {
  const loose = readdirSync(TEST).filter((name) => name.endsWith('.test.ts'));
  assert.deepEqual(loose, []);
});

test('every folder of suites names a layer of src/ or a kind of suite across layers', () => {
  const folders = readdirSync(TEST, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !HELPERS.includes(entry.name))
    .map((entry) => entry.name);
  const unknown = folders.filter((name) => !SRC_LAYERS.includes(name) && !ACROSS_LAYERS.includes(name));
  assert.deepEqual(unknown, [], `folders in test/ that are neither a src/ layer nor ${ACROSS_LAYERS.join(', ')}`);
  for (const name of [...folders, ...HELPERS]) {
    const nested = suitesIn(join(TEST, name)).filter((path) => path.includes('/'));
    assert.deepEqual(nested, [], `suites below test/${name}/ that npm test would not run`);
  }
});
