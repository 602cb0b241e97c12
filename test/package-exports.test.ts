import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
  exports: unknown;
  bin: Record<string, string>;
};

/** Every target path of an `exports` map, through conditions and subpaths alike. */
function targets(entry: unknown): string[] {
  if (typeof entry === 'string') return [entry];
  if (entry === null || typeof entry !== 'object') return [];
  return Object.values(entry).flatMap(targets);
}

test('every file package.json exports or runs as a bin exists', () => {
  const paths = [...targets(pkg.exports), ...Object.values(pkg.bin)];
  assert.ok(paths.length > 0);
  for (const path of paths) assert.ok(existsSync(new URL(path, root)), `${path} is named in package.json but missing`);
});
