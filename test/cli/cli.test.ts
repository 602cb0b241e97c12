import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../../src/domain/clock.ts';
import { runCliInProcess } from '../support/cli.ts';
import { buildTestApp, createTestStore, forEachDialect, testConfig, type TestStore } from '../support/harness.ts';

const run = promisify(execFile);

forEachDialect('matricula CLI', (dialect) => {
  let db: TestStore;
  let server: FastifyInstance;
  let base: string;
  const cli = (...args: string[]) => runCliInProcess({ DATABASE_URL: db.url, LOG_LEVEL: 'silent' }, args);
  /** The real program, bin/matricula in a process of its own: its exit code and streams. */
  const spawned = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run('./bin/matricula', args, {
        env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'silent' },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  before(async () => {
    db = await createTestStore(dialect);
    // A running server on the same database: the CLI works beside it.
    ({ app: server } = await buildTestApp(db.store, systemClock, testConfig()));
    base = await server.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await server.close();
    await db.drop();
  });

  test('org create --json prints exactly one JSON object; its key works against the running server', async () => {
    // Spawned: a stray line on stdout (a logger, a warning) would break the one JSON object.
    const res = await spawned('org', 'create', '--name', 'Acme Books', '--json');
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.deepEqual(Object.keys(out).sort(), ['apiKey', 'application', 'organization']);
    assert.deepEqual(Object.keys(out.organization).sort(), ['id', 'name']);
    assert.deepEqual(Object.keys(out.application).sort(), [
      'createdAt',
      'environment',
      'id',
      'keyCount',
      'name',
      'status',
      'webhookCount',
    ]);
    assert.deepEqual(Object.keys(out.apiKey).sort(), [
      'appId',
      'createdAt',
      'environment',
      'id',
      'keyHint',
      'name',
      'rawSecret',
    ]);
    assert.equal(out.organization.name, 'Acme Books');
    assert.match(out.apiKey.rawSecret, /^sk_test_/);
    const response = await fetch(`${base}/org/v1/apps`, {
      headers: { authorization: `Bearer ${out.apiKey.rawSecret}` },
    });
    assert.equal(response.status, 200);
    const apps = (await response.json()) as { data: Array<{ id: string }> };
    assert.deepEqual(
      apps.data.map((a) => a.id),
      [out.application.id],
    );
  });

  test('org create --environment live makes a live key; keys create and apps list work', async () => {
    const org = JSON.parse((await cli('org', 'create', '--name', 'Live Co', '--environment', 'live', '--json')).stdout);
    assert.match(org.apiKey.rawSecret, /^sk_live_/);
    const key = await cli('keys', 'create', '--app', org.application.id, '--name', 'pos-2', '--json');
    assert.equal(key.code, 0, key.stderr);
    const parsed = JSON.parse(key.stdout);
    assert.match(parsed.rawSecret, /^sk_live_/);
    assert.equal(parsed.appId, org.application.id);
    const list = JSON.parse((await cli('apps', 'list', '--org', org.organization.id, '--json')).stdout);
    assert.equal(list.data.length, 1);
    assert.equal(list.data[0].keyCount, 2);
    const human = await cli('apps', 'list', '--org', org.organization.id);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(org.application.id));
  });

  test('keys revoke: the next request with the key is refused; a second revoke says there is no key', async () => {
    const org = JSON.parse((await cli('org', 'create', '--name', 'Revoke Co', '--json')).stdout);
    const auth = { authorization: `Bearer ${org.apiKey.rawSecret}` };
    assert.equal((await fetch(`${base}/org/v1/apps`, { headers: auth })).status, 200);
    const revoked = await cli('keys', 'revoke', org.apiKey.id, '--json');
    assert.equal(revoked.code, 0, revoked.stderr);
    const out = JSON.parse(revoked.stdout);
    assert.equal(out.id, org.apiKey.id);
    assert.equal(out.appId, org.application.id);
    assert.equal((await fetch(`${base}/org/v1/apps`, { headers: auth })).status, 401);
    const again = await cli('keys', 'revoke', org.apiKey.id);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /no API key/);
    assert.equal((await cli('keys', 'revoke')).code, 2, 'a key id is required');
  });

  test('--help works on every command; bad usage exits 2 with a message', async () => {
    for (const args of [
      ['--help'],
      ['org', 'create', '--help'],
      ['keys', 'create', '--help'],
      ['keys', 'revoke', '--help'],
      ['apps', 'list', '--help'],
      ['org', '--help'],
    ]) {
      const res = await cli(...args);
      assert.equal(res.code, 0, args.join(' '));
      assert.match(res.stdout, /Usage: matricula/);
    }
    const missing = await spawned('org', 'create');
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--name is required/);
    const badEnv = await cli('org', 'create', '--name', 'x', '--environment', 'prod');
    assert.equal(badEnv.code, 2);
    const unknownFlag = await cli('org', 'create', '--name', 'x', '--colour', 'red');
    assert.equal(unknownFlag.code, 2);
    const unknownApp = await cli('keys', 'create', '--app', 'app_00000000000000000000000000', '--name', 'x');
    assert.equal(unknownApp.code, 2);
    assert.match(unknownApp.stderr, /no application/);
    const unknownCommand = await cli('frobnicate');
    assert.equal(unknownCommand.code, 2);
  });
});
