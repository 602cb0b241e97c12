import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryingCatalogueRaces } from '../support/harness.ts';

// The test harness migrates a schema per file on one shared PostgreSQL; what another file's DDL
// does to the catalogue meanwhile is retried, a migration's own failure is not.
const failing = (messages: string[]) => {
  let calls = 0;
  const run = async () => {
    const message = messages[calls++];
    if (message !== undefined) throw new Error(message);
    return calls;
  };
  return { run, calls: () => calls };
};

test('a column dropped by another file while the migrator lists the tables: retried', async () => {
  const f = failing(['database migration  failed: column "upgrade_note" of relation "sessions" does not exist']);
  assert.equal(await retryingCatalogueRaces('t_0a', f.run), 2);
});

test("another file's schema vanishing is retried; this file's own is not", async () => {
  assert.equal(await retryingCatalogueRaces('t_0a', failing(['schema "t_0b" does not exist']).run), 2);
  await assert.rejects(retryingCatalogueRaces('t_0a', failing(['schema "t_0a" does not exist']).run));
});

test("a migration's own error names it and is not retried; a race is tried five times at most", async () => {
  const named = failing(['database migration 0042_x failed: column "a" of relation "b" does not exist']);
  await assert.rejects(retryingCatalogueRaces('t_0a', named.run), /0042_x/);
  assert.equal(named.calls(), 1);
  const race = 'database migration  failed: column "a" of relation "b" does not exist';
  const endless = failing(Array.from({ length: 9 }, () => race));
  await assert.rejects(retryingCatalogueRaces('t_0a', endless.run));
  assert.equal(endless.calls(), 5);
});
