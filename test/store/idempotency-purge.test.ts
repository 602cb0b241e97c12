import assert from 'node:assert/strict';
import { test } from 'node:test';
import { purgeExpiredIdempotencyKeys } from '../../src/services/idempotency.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';

const HOUR_MS = 60 * 60 * 1000;

forEachDialect('idempotency purge', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));

  const createApp = (name: string, key: string) =>
    h.app.inject({
      method: 'POST',
      url: '/org/v1/apps',
      headers: { ...tenant.auth, 'idempotency-key': key },
      payload: { name },
    });
  const storedKeys = async () =>
    (
      await h.store.db.selectFrom('idempotency_keys').select('idempotency_key').orderBy('idempotency_key').execute()
    ).map((r) => r.idempotency_key);

  test('deletes the responses older than 24 hours, keeps the younger ones and their replays', async () => {
    assert.equal((await createApp('Old', 'purge-old')).statusCode, 201);
    h.clock.advance(1 * HOUR_MS);
    const young = await createApp('Young', 'purge-young');
    assert.equal(young.statusCode, 201);

    h.clock.advance(23 * HOUR_MS);
    assert.equal(
      await purgeExpiredIdempotencyKeys({ db: h.store.db, clock: h.clock }),
      0,
      'exactly 24 hours old is still inside the window',
    );
    assert.deepEqual(await storedKeys(), ['purge-old', 'purge-young']);

    h.clock.advance(1);
    assert.equal(await purgeExpiredIdempotencyKeys({ db: h.store.db, clock: h.clock }), 1);
    assert.deepEqual(await storedKeys(), ['purge-young']);
    const replay = await createApp('Young', 'purge-young');
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.json().data.id, young.json().data.id);

    h.clock.advance(1 * HOUR_MS);
    assert.equal(await purgeExpiredIdempotencyKeys({ db: h.store.db, clock: h.clock }), 1);
    assert.deepEqual(await storedKeys(), []);
    assert.equal(
      await purgeExpiredIdempotencyKeys({ db: h.store.db, clock: h.clock }),
      0,
      'a second run finds nothing',
    );
  });
});
