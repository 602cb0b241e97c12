import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { getGlobalConfig } from '@openid4vc/oauth2';
import { createServiceDeps } from '../../src/services/deps.ts';
import { TestClock } from '../../src/domain/clock.ts';
import { createTestStore, testConfig } from '../support/harness.ts';

/**
 * Process-wide switches of libraries are set once, at composition, never on a request path: a
 * switch flipped per request is shared by every request in the process.
 */

const SRC = new URL('../../src/', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

test('OpenID4VP library settings are made at composition only', async () => {
  const callers = sourceFiles(SRC)
    .filter((file) => /\bsetGlobalConfig\(/.test(readFileSync(file, 'utf8')))
    .map((file) => file.slice(SRC.length))
    .sort();
  // The service's one place, and the CLI's wallet (its own process, its own composition).
  assert.deepEqual(callers, ['cli/openid4vp-wallet.ts', 'services/openid4vp/library-config.ts']);

  // Composing the services with an http:// BASE_URL (local development) allows http URIs.
  const testStore = await createTestStore('sqlite');
  const { store } = testStore;
  try {
    const deps = createServiceDeps({ db: store.db, clock: new TestClock(), config: testConfig() });
    assert.equal(getGlobalConfig().allowInsecureUrls, true);
    await deps.close();
  } finally {
    await testStore.drop();
  }
});
