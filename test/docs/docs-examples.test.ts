import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { isAcademicLevel } from '../../src/domain/claims.ts';

const ROOT = new URL('../../', import.meta.url);

/** README.md and docs/*.md: what an integrator copies from. */
async function documents(): Promise<Array<{ name: string; text: string }>> {
  const docs = (await readdir(new URL('docs/', ROOT))).filter((name) => name.endsWith('.md')).map((n) => `docs/${n}`);
  return Promise.all(
    ['README.md', ...docs].map(async (name) => ({ name, text: await readFile(new URL(name, ROOT), 'utf8') })),
  );
}

test('every academic_level in a documented example is in the catalogue', async () => {
  let seen = 0;
  for (const { name, text } of await documents()) {
    for (const match of text.matchAll(/"academic_level":\s*"([^"]*)"/g)) {
      seen += 1;
      assert.ok(isAcademicLevel(match[1]!), `${name}: academic_level "${match[1]}" is not in the catalogue`);
    }
  }
  assert.ok(seen > 0, 'the docs show at least one academic_level');
});
