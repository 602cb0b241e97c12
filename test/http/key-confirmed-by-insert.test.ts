import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashSecret } from '../../src/domain/api-key-format.ts';
import { createSession } from '../../src/services/sessions.ts';
import { updateApplication } from '../../src/store/applications.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { installStatementCounter } from '../support/statements.ts';

/**
 * Session create admits a key this process authenticated before without reading it again
 * (http/auth.ts `confirmsKey`, PostgreSQL): its INSERT stores the session only while the key
 * exists and its application is active. Whatever the path, a request with a key revoked or an
 * application archived since gets authentication's refusal and stores nothing, even where another
 * error (a bad body, a missing application, a spent budget) would be answered first.
 */
const counter = installStatementCounter();

/** Requests per key per minute of the test clock, which does not move here. */
const BUDGET = 8;
const KEY_READ = /from "api_keys"/;
const CHECKING_INSERT = /insert into sessions[\s\S]*from api_keys/;

forEachDialect('session create, key confirmed by its insert', (dialect) => {
  let h: Harness;
  useHarness(dialect, (harness) => (h = harness), { RATE_LIMIT_API_KEY_PER_MINUTE: String(BUDGET) });

  const body = (tenant: Tenant, extra: Record<string, unknown> = {}) => ({
    appId: tenant.appId,
    purpose: 'Student discount',
    requiredClaims: ['is_active_student'],
    ...extra,
  });
  const create = (
    tenant: Tenant,
    secret: string,
    payload: Record<string, unknown> = body(tenant),
    headers: Record<string, string> = {},
    app = h.app,
  ) =>
    app.inject({
      method: 'POST',
      url: '/verification/v1/sessions',
      headers: { authorization: `Bearer ${secret}`, ...headers },
      payload,
    });
  /** A second key of the tenant's application, issued through the API. */
  async function secondKey(tenant: Tenant): Promise<{ id: string; secret: string }> {
    const res = await h.app.inject({
      method: 'POST',
      url: '/org/v1/keys',
      headers: tenant.auth,
      payload: { appId: tenant.appId, name: 'second', environment: 'sandbox' },
    });
    assert.equal(res.statusCode, 201, res.body);
    const { id, rawSecret } = res.json().data as { id: string; rawSecret: string };
    return { id, secret: rawSecret };
  }
  async function revoke(tenant: Tenant, keyId: string): Promise<void> {
    const res = await h.app.inject({ method: 'DELETE', url: `/org/v1/keys/${keyId}`, headers: tenant.auth });
    assert.equal(res.statusCode, 200, res.body);
  }
  async function sessionCount(tenant: Tenant): Promise<number> {
    const res = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions?appId=${tenant.appId}&limit=100`,
      headers: tenant.auth,
    });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json().data as unknown[]).length;
  }
  const refusal = (res: { statusCode: number; json: () => { error: { code: string; message: string } } }) => ({
    status: res.statusCode,
    code: res.json().error?.code,
  });

  test('a key seen before creates in one statement on PostgreSQL, the INSERT that checks it', async () => {
    const tenant = await h.bootstrap();
    const first = await counter.during(async () => assert.equal((await create(tenant, tenant.secret)).statusCode, 201));
    assert.ok(
      first.some((s) => KEY_READ.test(s)),
      'a key never seen is read',
    );
    const statements = await counter.during(async () =>
      assert.equal((await create(tenant, tenant.secret)).statusCode, 201),
    );
    if (dialect === 'postgres') {
      assert.equal(statements.length, 1, statements.join('\n---\n'));
      assert.match(statements[0], CHECKING_INSERT);
    } else {
      // SQLite reads in process: the key is read on every request, as before.
      assert.ok(
        statements.some((s) => KEY_READ.test(s)),
        statements.join('\n---\n'),
      );
    }
    assert.equal(await sessionCount(tenant), 2);
  });

  test('a key revoked since is refused as revoked, and nothing is stored', async () => {
    const tenant = await h.bootstrap();
    const key = await secondKey(tenant);
    assert.equal((await create(tenant, key.secret)).statusCode, 201);
    await revoke(tenant, key.id);
    for (let i = 0; i < 2; i++)
      assert.deepEqual(refusal(await create(tenant, key.secret)), { status: 401, code: 'key_revoked' }, `try ${i}`);
    assert.equal(await sessionCount(tenant), 1);
  });

  test('revoked through another process, refused by this one at once', async () => {
    const tenant = await h.bootstrap();
    const key = await secondKey(tenant);
    assert.equal((await create(tenant, key.secret)).statusCode, 201);
    const other = await h.secondInstance();
    const res = await other.inject({ method: 'DELETE', url: `/org/v1/keys/${key.id}`, headers: tenant.auth });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(refusal(await create(tenant, key.secret)), { status: 401, code: 'key_revoked' });
    // The other process never saw the key: it reads it, and refuses it too.
    assert.deepEqual(refusal(await create(tenant, key.secret, body(tenant), {}, other)), {
      status: 401,
      code: 'key_revoked',
    });
    assert.equal(await sessionCount(tenant), 1);
  });

  test('an application archived since is refused, and creates again once restored', async () => {
    const tenant = await h.bootstrap();
    assert.equal((await create(tenant, tenant.secret)).statusCode, 201);
    const at = new Date().toISOString();
    await updateApplication(h.store.db, tenant.appId, { status: 'archived' }, at);
    const refused = await create(tenant, tenant.secret);
    assert.deepEqual(refusal(refused), { status: 401, code: 'unauthenticated' });
    assert.match(refused.json().error.message, /archived/);
    await updateApplication(h.store.db, tenant.appId, { status: 'active' }, at);
    assert.equal((await create(tenant, tenant.secret)).statusCode, 201);
    assert.equal(await sessionCount(tenant), 2);
  });

  test('an error that would be answered before the insert is the revoked key’s refusal instead', async () => {
    const tenant = await h.bootstrap();
    const live = await secondKey(tenant);
    const doomed = await secondKey(tenant);
    assert.equal((await create(tenant, live.secret)).statusCode, 201);
    // The doomed key spends its budget while good: its last requests are refused for that.
    let spent = 0;
    while ((await create(tenant, doomed.secret)).statusCode === 201) spent++;
    assert.equal(spent, BUDGET);
    assert.deepEqual(refusal(await create(tenant, doomed.secret)), { status: 429, code: 'rate_limited' });
    const cases = {
      'a body that fails validation': [body(tenant, { purpose: undefined }), 400],
      'an application that does not exist': [body(tenant, { appId: 'app_01jd8x4m2n5p6q7r8s9t0v1w2x' }), 404],
      'a returnUrl at an origin not allowed': [body(tenant, { returnUrl: 'https://elsewhere.example/back' }), 400],
      'a request over its budget': [body(tenant), 429],
    } as const;
    // With the good key each gets its own error (its budget spent by the last): the refusals below
    // are the key's.
    for (const [name, [payload, status]] of Object.entries(cases)) {
      if (status === 429) while ((await create(tenant, live.secret)).statusCode !== 429);
      const res = await create(tenant, live.secret, payload);
      assert.equal(res.statusCode, status, `${name}: ${res.body}`);
    }
    await revoke(tenant, doomed.id);
    for (const [name, [payload]] of Object.entries(cases))
      assert.deepEqual(
        refusal(await create(tenant, doomed.secret, payload)),
        { status: 401, code: 'key_revoked' },
        name,
      );
    assert.equal(await sessionCount(tenant), BUDGET + 1 + (BUDGET - 4));
  });

  test('with an Idempotency-Key the key is read before the key is claimed', async () => {
    const tenant = await h.bootstrap();
    assert.equal((await create(tenant, tenant.secret)).statusCode, 201);
    const statements = await counter.during(async () =>
      assert.equal((await create(tenant, tenant.secret, body(tenant), { 'idempotency-key': 'once' })).statusCode, 201),
    );
    const keyRead = statements.findIndex((s) => KEY_READ.test(s) && !CHECKING_INSERT.test(s));
    const claim = statements.findIndex((s) => /idempotency_keys/.test(s));
    assert.ok(keyRead >= 0 && keyRead < claim, statements.join('\n---\n'));
  });

  test('an insert that refuses a key which then reads as good creates under the key read', async () => {
    const tenant = await h.bootstrap();
    const principal = {
      orgId: tenant.orgId,
      environment: 'sandbox' as const,
      keyId: tenant.keyId,
      appId: tenant.appId,
    };
    if (!h.services.sessionInserts.checksKeys) {
      assert.equal(dialect, 'sqlite');
      return;
    }
    let reads = 0;
    // A key id with a hash that is not its own: refused by the INSERT, then "read" as good.
    const session = await createSession(h.services, principal, body(tenant) as never, {
      key: { keyId: tenant.keyId, keyHash: hashSecret('sk_test_not_this_key') },
      reauthenticate: async () => {
        reads++;
        return principal;
      },
    });
    assert.equal(reads, 1);
    assert.equal(session.appId, tenant.appId);
    assert.equal(await sessionCount(tenant), 1);
  });
});
