import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ADMIN_RATE_LIMIT_PER_MINUTE } from '../../src/routes/admin.ts';
import { sandboxIssuers } from '../../src/proofs/issuer-definitions.ts';
import { sandboxIssuerKeyPair as jwkKeyPair } from '../../src/proofs/sd-jwt-vc/index.ts';
import { forEachDialect, useHarness, type Harness } from '../support/harness.ts';
import { operationsOf } from '../support/route-table.ts';

const TOKEN = 'admin-token-0123456789abcdef0123';
const admin = { authorization: `Bearer ${TOKEN}` };

/**
 * A live university for these tests: pruebas.example's identity with a key of its own (published
 * sandbox keys are refused for live entries).
 */
const liveKey = jwkKeyPair('admin-live-test', 'EdDSA').publicJwk;
const liveIssuer = () => {
  const pruebas = sandboxIssuers().find((i) => i.domain === 'pruebas.example')!;
  return { ...pruebas, environment: 'live', name: 'Universidad de Pruebas (live test)', keys: { sdJwtVc: liveKey } };
};

forEachDialect('admin API', (dialect) => {
  describe('without ADMIN_TOKEN', () => {
    let h: Harness;
    useHarness(dialect, (harness) => {
      h = harness;
    });

    test('every /admin/v1 route is a 404, with or without a token, and none is documented', async () => {
      for (const [method, url] of [
        ['GET', '/admin/v1/organizations'],
        ['POST', '/admin/v1/organizations'],
        ['GET', '/admin/v1/issuers'],
        ['GET', '/admin/v1/issuers/iss_x'],
        ['DELETE', '/admin/v1/issuers/iss_x'],
      ] as const) {
        for (const headers of [{}, admin]) {
          const res = await h.app.inject({ method, url, headers, payload: method === 'POST' ? {} : undefined });
          assert.equal(res.statusCode, 404, `${method} ${url}`);
          assert.equal(res.json().error.code, 'not_found');
        }
      }
      const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      assert.deepEqual(
        Object.keys(doc.paths).filter((p) => p.startsWith('/admin')),
        [],
      );
    });
  });

  describe('with ADMIN_TOKEN', () => {
    let h: Harness;
    useHarness(
      dialect,
      (harness) => {
        h = harness;
      },
      { ADMIN_TOKEN: TOKEN },
    );

    test('every admin operation is documented with the admin token, and refuses a missing or wrong one', async () => {
      const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const ops = operationsOf(doc).filter((op) => op.path.startsWith('/admin/'));
      assert.deepEqual(ops.map((op) => op.id).sort(), [
        'DELETE /admin/v1/credential-profiles/{profileId}',
        'DELETE /admin/v1/identity-federations/{fedId}',
        'DELETE /admin/v1/identity-providers/{idpId}',
        'DELETE /admin/v1/issuers/{issuerId}',
        'GET /admin/v1/credential-profiles',
        'GET /admin/v1/identity-federations',
        'GET /admin/v1/identity-federations/{fedId}',
        'GET /admin/v1/identity-providers',
        'GET /admin/v1/identity-providers/{idpId}',
        'GET /admin/v1/issuers',
        'GET /admin/v1/issuers/{issuerId}',
        'GET /admin/v1/organizations',
        'POST /admin/v1/credential-profiles',
        'POST /admin/v1/identity-federations',
        'POST /admin/v1/identity-federations/{fedId}/refresh',
        'POST /admin/v1/identity-providers',
        'POST /admin/v1/issuers',
        'POST /admin/v1/issuers/{issuerId}/refresh',
        'POST /admin/v1/organizations',
        'POST /admin/v1/organizations/{orgId}/invitations',
      ]);
      const before = (await h.app.inject({ method: 'GET', url: '/admin/v1/issuers?limit=100', headers: admin })).json();
      for (const op of ops) {
        assert.deepEqual(doc.paths[op.path][op.method.toLowerCase()].security, [{ adminToken: [] }], op.id);
        const url = op.path
          .replace('{issuerId}', before.data[0].id)
          .replace('{profileId}', 'enrolment_attestation')
          .replace('{orgId}', 'org_00000000000000000000000000')
          .replace('{idpId}', 'idp_00000000000000000000000000')
          .replace('{fedId}', 'fed_00000000000000000000000000');
        for (const headers of [
          {},
          { authorization: `Bearer ${TOKEN}x` },
          { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
          { authorization: `Basic ${TOKEN}` },
        ]) {
          const payload = op.method === 'POST' ? { name: 'Intruder' } : undefined;
          const res = await h.app.inject({ method: op.method as 'GET', url, headers, payload });
          assert.equal(res.statusCode, 401, `${op.id} ${JSON.stringify(headers)}: ${res.body}`);
          assert.equal(res.json().error.code, 'unauthenticated');
          assert.equal(res.headers['www-authenticate'], 'Bearer');
        }
        // Four refused requests per operation, from one address: each operation in a minute of its
        // own keeps the whole list under the per-address admin limit.
        h.clock.advance(60_000);
      }
      const after = (await h.app.inject({ method: 'GET', url: '/admin/v1/issuers?limit=100', headers: admin })).json();
      assert.deepEqual(after, before, 'a refused request changed nothing');
      const orgs = (await h.app.inject({ method: 'GET', url: '/admin/v1/organizations', headers: admin })).json();
      assert.ok(!JSON.stringify(orgs).includes('Intruder'));
      // Those were many requests from one address: a new minute, so the next tests start under the limit.
      h.clock.advance(60_000);
    });

    test('an organization created through the admin API works with its key; the list pages', async () => {
      const res = await h.app.inject({
        method: 'POST',
        url: '/admin/v1/organizations',
        headers: admin,
        payload: { name: 'Acme Books', environment: 'live' },
      });
      assert.equal(res.statusCode, 201, res.body);
      const created = res.json().data;
      assert.equal(created.organization.name, 'Acme Books');
      assert.match(created.apiKey.rawSecret, /^sk_live_/);
      const apps = await h.app.inject({
        method: 'GET',
        url: '/org/v1/apps',
        headers: { authorization: `Bearer ${created.apiKey.rawSecret}` },
      });
      assert.equal(apps.statusCode, 200, apps.body);
      assert.deepEqual(
        apps.json().data.map((a: { id: string }) => a.id),
        [created.application.id],
      );

      const invalid = await h.app.inject({
        method: 'POST',
        url: '/admin/v1/organizations',
        headers: admin,
        payload: { name: '', environment: 'prod' },
      });
      assert.equal(invalid.statusCode, 400);

      for (const name of ['Second', 'Third']) {
        h.clock.advance(1);
        const r = await h.app.inject({
          method: 'POST',
          url: '/admin/v1/organizations',
          headers: admin,
          payload: { name },
        });
        assert.equal(r.statusCode, 201);
      }
      const first = (
        await h.app.inject({ method: 'GET', url: '/admin/v1/organizations?limit=2', headers: admin })
      ).json();
      assert.deepEqual(
        first.data.map((o: { name: string }) => o.name),
        ['Third', 'Second'],
      );
      assert.equal(first.pagination.hasMore, true);
      const second = (
        await h.app.inject({
          method: 'GET',
          url: `/admin/v1/organizations?limit=2&startingAfter=${first.pagination.nextCursor}`,
          headers: admin,
        })
      ).json();
      assert.ok(second.data.some((o: { id: string }) => o.id === created.organization.id));
    });

    test('issuers: add validates and refuses duplicates, get, list by environment, delete takes effect', async () => {
      const refused = await h.app.inject({
        method: 'POST',
        url: '/admin/v1/issuers',
        headers: admin,
        payload: { ...liveIssuer(), domain: 'Not A Domain', country: 'Spain' },
      });
      assert.equal(refused.statusCode, 400, refused.body);
      assert.match(refused.json().error.message, /domain.*country/s);

      const added = await h.app.inject({
        method: 'POST',
        url: '/admin/v1/issuers',
        headers: admin,
        payload: liveIssuer(),
      });
      assert.equal(added.statusCode, 201, added.body);
      const issuer = added.json().data;
      assert.match(issuer.id, /^iss_/);
      assert.deepEqual(issuer.keys, liveIssuer().keys);
      const duplicate = await h.app.inject({
        method: 'POST',
        url: '/admin/v1/issuers',
        headers: admin,
        payload: liveIssuer(),
      });
      assert.equal(duplicate.statusCode, 409);

      const got = await h.app.inject({ method: 'GET', url: `/admin/v1/issuers/${issuer.id}`, headers: admin });
      assert.deepEqual(got.json().data, issuer);
      const live = await h.app.inject({ method: 'GET', url: '/admin/v1/issuers?environment=live', headers: admin });
      assert.deepEqual(
        live.json().data.map((i: { id: string }) => i.id),
        [issuer.id],
      );

      const removed = await h.app.inject({ method: 'DELETE', url: `/admin/v1/issuers/${issuer.id}`, headers: admin });
      assert.equal(removed.statusCode, 200);
      assert.equal(
        (await h.app.inject({ method: 'GET', url: `/admin/v1/issuers/${issuer.id}`, headers: admin })).statusCode,
        404,
      );
      assert.equal(
        (await h.app.inject({ method: 'DELETE', url: `/admin/v1/issuers/${issuer.id}`, headers: admin })).statusCode,
        404,
      );
      const after = await h.app.inject({ method: 'GET', url: '/admin/v1/issuers?environment=live', headers: admin });
      assert.deepEqual(after.json().data, []);
    });

    test('a client address gets its own fixed window of requests; then 429 with Retry-After', async () => {
      // A fresh window, so that the earlier tests' requests do not count.
      h.clock.advance(60_000 - (h.clock.now().getTime() % 60_000));
      const from = (remoteAddress: string, headers: Record<string, string> = admin) =>
        h.app.inject({ method: 'GET', url: '/admin/v1/organizations?limit=1', headers, remoteAddress });
      for (let i = 0; i < ADMIN_RATE_LIMIT_PER_MINUTE; i++) {
        const res = await from('192.0.2.1', i % 2 === 0 ? admin : {});
        assert.notEqual(res.statusCode, 429, `request ${i + 1}`);
      }
      const limited = await from('192.0.2.1');
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.json().error.code, 'rate_limited');
      assert.equal(limited.headers['retry-after'], '60');
      assert.equal((await from('192.0.2.2')).statusCode, 200, 'another address has its own window');
      h.clock.advance(60_000);
      assert.equal((await from('192.0.2.1')).statusCode, 200, 'the next window starts afresh');
    });
  });
});
