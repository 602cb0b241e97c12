import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { serviceBaseUrl } from '../../src/cli/api-client.ts';
import { runCli } from '../../src/cli/main.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { offlineCliContext } from '../support/cli.ts';
import { listeningApp } from '../support/server.ts';

/**
 * One address for the service, for every CLI command: `--base-url`, else MATRICULA_BASE_URL, else
 * BASE_URL, else http://localhost:8080. The wallet used to read BASE_URL only and `listen`
 * MATRICULA_BASE_URL only, so with the latter set the wallet went to port 8080.
 */

/** A port nothing listens on: a command sent there fails to connect. */
const NOWHERE = 'http://127.0.0.1:9';

const context = offlineCliContext;

test('the order: the flag, MATRICULA_BASE_URL, BASE_URL, localhost:8080; a bad value names its source', () => {
  const base = (env: Record<string, string>, value?: string) =>
    serviceBaseUrl({ name: 'base-url', value }, context(env).ctx);
  const both = { MATRICULA_BASE_URL: 'http://primary.test/', BASE_URL: 'http://server.test' };
  assert.equal(base(both, 'http://flag.test//'), 'http://flag.test');
  assert.equal(base(both), 'http://primary.test');
  assert.equal(base({ BASE_URL: 'http://server.test' }), 'http://server.test');
  assert.equal(base({}), 'http://localhost:8080');
  assert.throws(() => base({ MATRICULA_BASE_URL: 'localhost:8080x' }), /MATRICULA_BASE_URL must be http\(s\)/);
  assert.throws(() => base({ MATRICULA_BASE_URL: 'nope' }), /MATRICULA_BASE_URL is not a URL: nope/);
});

test('wallet presentation binds to MATRICULA_BASE_URL, as listen would call it', async () => {
  const { ctx, stdout, stderr } = context({ MATRICULA_BASE_URL: 'https://verify.shop.test', BASE_URL: NOWHERE });
  assert.equal(await runCli(['wallet', 'presentation', '--format', 'sd-jwt-vc', '--json'], ctx), 0, stderr.join(''));
  assert.equal(JSON.parse(stdout.join('')).audience, 'https://verify.shop.test');
});

forEachDialect('the CLI finds the service by MATRICULA_BASE_URL', (dialect) => {
  let db: TestStore;
  let server: FastifyInstance;
  let baseUrl: string;
  let apiKey: string;
  let appId: string;
  before(async () => {
    db = await createTestStore(dialect);
    await seedSandboxIssuers(db.store.db, systemClock);
    ({ app: server, baseUrl } = await listeningApp(db.store, systemClock));
    const created = await createOrganization(
      { db: db.store.db, clock: systemClock },
      { name: 'CLI base URL', environment: 'sandbox' },
    );
    appId = created.application.id;
    apiKey = created.apiKey.rawSecret;
  });
  after(async () => {
    await server?.close();
    await db?.drop();
  });

  const newSession = async () => {
    const res = await fetch(`${baseUrl}/verification/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ appId, purpose: 'CLI base URL', requiredClaims: ['is_active_student'] }),
    });
    return ((await res.json()) as { data: { qrPayload: string; sessionId: string } }).data;
  };

  for (const env of [{ MATRICULA_BASE_URL: 'service' }, { BASE_URL: 'service' }]) {
    const name = Object.keys(env)[0]!;
    test(`wallet present with only ${name} set reaches the service`, async () => {
      const session = await newSession();
      const { ctx, stdout, stderr } = context({ [name]: baseUrl });
      assert.equal(await runCli(['wallet', 'present', '--qr', session.qrPayload, '--json'], ctx), 0, stderr.join(''));
      assert.equal(JSON.parse(stdout.join('')).verified, true);
    });
  }

  test('MATRICULA_BASE_URL wins over BASE_URL for wallet present and webhooks test alike', async () => {
    const session = await newSession();
    const wallet = context({ MATRICULA_BASE_URL: baseUrl, BASE_URL: NOWHERE });
    assert.equal(
      await runCli(['wallet', 'present', '--qr', session.qrPayload, '--json'], wallet.ctx),
      0,
      wallet.stderr.join(''),
    );
    const webhooks = context({ MATRICULA_BASE_URL: baseUrl, BASE_URL: NOWHERE, MATRICULA_API_KEY: apiKey });
    // An API call through the shared client: the service answers (no such endpoint), not a refused connection.
    const code = await runCli(['webhooks', 'test', 'whk_01aaaaaaaaaaaaaaaaaaaaaaaa'], webhooks.ctx);
    assert.equal(code, 1);
    assert.doesNotMatch(webhooks.stderr.join(''), /ECONNREFUSED|connect/i);
    assert.match(webhooks.stderr.join(''), /No such webhook endpoint/);
  });
});
