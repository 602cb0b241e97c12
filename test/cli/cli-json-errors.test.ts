import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { runCli } from '../../src/cli/main.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { offlineCliContext } from '../support/cli.ts';
import { listeningApp } from '../support/server.ts';

/**
 * `--json` answers with JSON when the command fails too: exactly one error object on stdout (a
 * script reading stdout used to get nothing), the sentence on stderr as before.
 */

const QR = 'matricula://verify?session=sess_01aaaaaaaaaaaaaaaaaaaaaaaa&nonce=nonce_x';

async function cli(env: Record<string, string>, ...argv: string[]) {
  const { ctx, stdout, stderr } = offlineCliContext(env);
  const code = await runCli(argv, ctx);
  assert.equal(stdout.length, 1, `one object on stdout: ${JSON.stringify(stdout)}`);
  return { code, json: JSON.parse(stdout[0]!), stderr: stderr.join('\n') };
}

test('wallet present --json: a usage error and an unreachable service are one JSON error each', async () => {
  const usage = await cli({}, 'wallet', 'present', '--json');
  assert.equal(usage.code, 2);
  assert.deepEqual(usage.json, { error: { type: 'usage', message: '--qr is required' } });
  assert.match(usage.stderr, /^Error: --qr is required/);

  const unreachable = await cli(
    { MATRICULA_BASE_URL: 'http://127.0.0.1:9' },
    'wallet',
    'present',
    '--qr',
    QR,
    '--json',
  );
  assert.equal(unreachable.code, 1);
  assert.equal(unreachable.json.error.type, 'error');
  assert.match(unreachable.json.error.message, /^cannot reach http:\/\/127\.0\.0\.1:9\//);
});

test('without --json nothing changes: the error goes to stderr only', async () => {
  const stdout: string[] = [];
  const ctx = {
    env: {},
    stdout: (text: string) => stdout.push(text),
    stderr: () => undefined,
    clock: systemClock,
    openStore: () => Promise.reject(new Error('no database')),
    config: () => {
      throw new Error('no configuration');
    },
  };
  assert.equal(await runCli(['wallet', 'present'], ctx), 2);
  assert.deepEqual(stdout, []);
});

forEachDialect('wallet present --json against a service that refuses', (dialect) => {
  let db: TestStore;
  let server: FastifyInstance;
  let baseUrl: string;
  before(async () => {
    db = await createTestStore(dialect);
    await seedSandboxIssuers(db.store.db, systemClock);
    ({ app: server, baseUrl } = await listeningApp(db.store, systemClock));
  });
  after(async () => {
    await server?.close();
    await db?.drop();
  });

  test('an unknown session: the HTTP status and the service error code', async () => {
    const res = await cli({ MATRICULA_BASE_URL: baseUrl }, 'wallet', 'present', '--qr', QR, '--json');
    assert.equal(res.code, 1);
    assert.equal(res.json.error.type, 'service');
    assert.equal(res.json.error.status, 404);
    assert.equal(res.json.error.code, 'not_found');
    assert.match(res.json.error.message, /^reading the request: HTTP 404 not_found/);
  });
});
