import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { hashSecret } from '../../src/domain/api-key-format.ts';
import { forEachDialect, startHarness, type Harness } from '../support/harness.ts';

/** Every row of every table, as text: what a database dump would hold. */
async function dumpAllRows(h: Harness): Promise<string> {
  const tables =
    h.store.capabilities.name === 'sqlite'
      ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(h.store.db)).rows.map(
          (r) => r.name,
        )
      : (
          await sql<{
            name: string;
          }>`select table_name as name from information_schema.tables where table_schema = current_schema()`.execute(
            h.store.db,
          )
        ).rows.map((r) => r.name);
  let dump = '';
  for (const table of tables) {
    const rows = await sql`select * from ${sql.table(table)}`.execute(h.store.db);
    dump += `${table}\n${JSON.stringify(rows.rows)}\n`;
  }
  return dump;
}

forEachDialect('secrets at rest', (dialect) => {
  let h: Harness;
  before(async () => {
    h = await startHarness(dialect);
  });
  after(() => h.close());

  test('a dump of the database holds no raw API secret, only its SHA-256 and hint', async () => {
    const tenant = await h.bootstrap('sandbox');
    const generated = (
      await h.app.inject({
        method: 'POST',
        url: '/org/v1/keys',
        headers: tenant.auth,
        payload: { appId: tenant.appId, name: 'pos', environment: 'sandbox' },
      })
    ).json().data;
    const revokedKey = (
      await h.app.inject({
        method: 'POST',
        url: '/org/v1/keys',
        headers: tenant.auth,
        payload: { appId: tenant.appId, name: 'old', environment: 'sandbox' },
      })
    ).json().data;
    await h.app.inject({ method: 'DELETE', url: `/org/v1/keys/${revokedKey.id}`, headers: tenant.auth });
    // An idempotent key generation must not keep the secret in the replay store either.
    const idem = await h.app.inject({
      method: 'POST',
      url: '/org/v1/keys',
      headers: { ...tenant.auth, 'idempotency-key': 'k1' },
      payload: { appId: tenant.appId, name: 'idem', environment: 'sandbox' },
    });
    assert.equal(idem.statusCode, 201);

    const dump = await dumpAllRows(h);
    for (const secret of [tenant.secret, generated.rawSecret, revokedKey.rawSecret, idem.json().data.rawSecret]) {
      assert.ok(!dump.includes(secret), 'raw secret found in the database');
      assert.ok(!dump.includes(secret.slice(8, 30)), 'secret body found in the database');
      assert.ok(dump.includes(hashSecret(secret)), 'hash is stored');
    }
    if (dialect === 'sqlite') {
      const file = h.testStore.url.replace(/^sqlite:/, '');
      for (const path of [file, `${file}-wal`]) {
        if (!existsSync(path)) continue;
        const bytes = readFileSync(path).toString('latin1');
        assert.ok(!bytes.includes(generated.rawSecret.slice(8)), `secret in ${path}`);
      }
    }
  });

  test('an idempotent replay of key generation does not return the secret again', async () => {
    const tenant = await h.bootstrap('sandbox');
    const body = { appId: tenant.appId, name: 'replayed', environment: 'sandbox' };
    const first = await h.app.inject({
      method: 'POST',
      url: '/org/v1/keys',
      headers: { ...tenant.auth, 'idempotency-key': 'k2' },
      payload: body,
    });
    const replay = await h.app.inject({
      method: 'POST',
      url: '/org/v1/keys',
      headers: { ...tenant.auth, 'idempotency-key': 'k2' },
      payload: body,
    });
    assert.equal(first.statusCode, 201);
    assert.equal(replay.statusCode, 201);
    assert.equal(replay.json().data.id, first.json().data.id);
    assert.ok(!replay.body.includes(first.json().data.rawSecret));
    assert.equal(replay.json().data.rawSecret, null);
    assert.equal(replay.json().data.keyHint, first.json().data.keyHint);
  });
});
