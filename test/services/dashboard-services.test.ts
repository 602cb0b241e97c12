import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import type { Principal } from '../../src/domain/principal.ts';
import { applicationFunnel } from '../../src/services/funnel.ts';
import { replayFailedDeliveries } from '../../src/services/webhook-replay.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { buildPresentation, consent, createSession, submit } from '../support/sessions.ts';
import { createEndpoint, emitEvent } from '../support/webhooks.ts';

const run = promisify(execFile);

/** What the dashboard's pages read and do beyond the API's own services: the funnel, the replay, the bootstrap. */
forEachDialect('dashboard services', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  useHarness(dialect, (...suite) => ([h, tenant] = suite));
  const principal = (): Principal => ({ orgId: tenant.orgId, environment: 'sandbox', keyId: 'test', appId: '' });

  test('the funnel per day: counted once a day is closed, then read from the aggregate', async () => {
    const day1 = h.clock.now().toISOString().slice(0, 10);
    const verified = await createSession(h, tenant);
    await consent(h, verified);
    const p = await buildPresentation(h, 'sd-jwt-vc', { nonce: verified.challengeNonce });
    assert.equal((await submit(h, verified, 'sd-jwt-vc', p)).json().data.verified, true);
    const declined = await createSession(h, tenant);
    await consent(h, declined, 'declined');
    await createSession(h, tenant);

    const today = await applicationFunnel(h.services, principal(), tenant.appId, 3);
    assert.deepEqual(today[0], { day: day1, created: 3, consented: 1, verified: 1, notVerified: 0 });
    const stored = () =>
      h.store.db.selectFrom('session_funnel_daily').selectAll().where('app_id', '=', tenant.appId).execute();
    assert.equal((await stored()).filter((r) => r.day === day1).length, 0, 'an open day is not stored');

    h.clock.advance(2 * 24 * 60 * 60 * 1000);
    const later = await applicationFunnel(h.services, principal(), tenant.appId, 3);
    assert.deepEqual(later[2], { day: day1, created: 3, consented: 1, verified: 1, notVerified: 0 });
    const row = (await stored()).find((r) => r.day === day1);
    assert.equal(Number(row?.created), 3, 'a closed day is kept');
    // Read from the aggregate from now on: a changed row shows, proving no session was counted.
    await h.store.db
      .updateTable('session_funnel_daily')
      .set({ created: 99 })
      .where('app_id', '=', tenant.appId)
      .where('day', '=', day1)
      .execute();
    assert.equal((await applicationFunnel(h.services, principal(), tenant.appId, 3))[2]!.created, 99);
  });

  test('expired dashboard sign-ins are purged; live ones stay', async () => {
    const {
      startDashboardSession,
      dashboardSession,
      purgeExpiredDashboardSignIns,
      acceptInvitation,
      createOrganizationWithOwner,
    } = await import('../../src/services/members.ts');
    const created = await createOrganizationWithOwner(h.services, {
      name: 'P',
      environment: 'sandbox',
      ownerEmail: 'p@purge.example',
    });
    const member = await acceptInvitation(
      h.services,
      created.ownerInvitation.url.split('/').pop()!,
      'a long enough password',
    );
    const old = await startDashboardSession(h.services, member);
    h.clock.advance(13 * 60 * 60 * 1000);
    const fresh = await startDashboardSession(h.services, member);
    assert.equal(await purgeExpiredDashboardSignIns(h.services), 1);
    assert.equal(await dashboardSession(h.services, old), undefined);
    assert.ok(await dashboardSession(h.services, fresh));
  });

  test('replay: the failed deliveries since a time are due again, the others untouched', async () => {
    const endpoint = await createEndpoint(h, tenant, 'http://127.0.0.1:9/hooks');
    await emitEvent(h, tenant);
    h.clock.advance(1000);
    const since = h.clock.now().toISOString();
    await emitEvent(h, tenant);
    await h.store.db
      .updateTable('webhook_deliveries')
      .set({ status: 'failed', due_at: null })
      .where('endpoint_id', '=', endpoint.id)
      .execute();
    h.clock.advance(1000);
    const { requeued } = await replayFailedDeliveries(h.services, principal(), endpoint.id, since);
    assert.equal(requeued, 1);
    const statuses = await h.store.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'created_at'])
      .where('endpoint_id', '=', endpoint.id)
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      statuses.map((s) => s.status),
      ['failed', 'pending'],
    );
    await assert.rejects(replayFailedDeliveries(h.services, principal(), endpoint.id, 'yesterday'), /since/);
  });

  test('org create --owner-email: the organization and its owner invitation in one command', async () => {
    const url = h.testStore.url;
    const { stdout } = await run(
      './bin/matricula',
      ['org', 'create', '--name', 'Acme', '--owner-email', 'Boss@Acme.example', '--json'],
      {
        env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent', BASE_URL: 'https://matricula.example' },
      },
    );
    const out = JSON.parse(stdout);
    assert.equal(out.ownerInvitation.email, 'boss@acme.example');
    assert.equal(out.ownerInvitation.role, 'owner');
    assert.match(out.ownerInvitation.url, /^https:\/\/matricula\.example\/dashboard\/invitations\/[\w-]{43}$/);
    const page = await h.app.inject({ method: 'GET', url: new URL(out.ownerInvitation.url).pathname });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Join as owner/);
  });

  test('members invite: the operator invites to an existing organization; an unknown one is refused', async () => {
    const env = {
      ...process.env,
      DATABASE_URL: h.testStore.url,
      LOG_LEVEL: 'silent',
      BASE_URL: 'https://matricula.example',
    };
    const { stdout } = await run(
      './bin/matricula',
      ['members', 'invite', '--org', tenant.orgId, '--email', 'dev@acme.example', '--role', 'viewer', '--json'],
      { env },
    );
    const invitation = JSON.parse(stdout);
    assert.equal(invitation.role, 'viewer');
    const page = await h.app.inject({ method: 'GET', url: new URL(invitation.url).pathname });
    assert.match(page.body, /Join as viewer/);
    const unknown = await run(
      './bin/matricula',
      ['members', 'invite', '--org', 'org_nope', '--email', 'x@acme.example'],
      {
        env,
      },
    ).catch((err: { code: number; stderr: string }) => err);
    assert.notEqual((unknown as { code?: number }).code ?? 0, 0);
  });
});

forEachDialect('admin API invitations', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  const ADMIN = { authorization: 'Bearer admin-token-for-tests-0123456789' };
  useHarness(dialect, (...suite) => ([h, tenant] = suite), { ADMIN_TOKEN: 'admin-token-for-tests-0123456789' });

  test('ownerEmail on organization creation, and an invitation to an existing organization', async () => {
    const created = await h.app.inject({
      method: 'POST',
      url: '/admin/v1/organizations',
      headers: ADMIN,
      payload: { name: 'Acme', ownerEmail: 'boss@acme.example' },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().data.ownerInvitation.role, 'owner');
    const invited = await h.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${tenant.orgId}/invitations`,
      headers: ADMIN,
      payload: { email: 'dev@acme.example', role: 'developer' },
    });
    assert.equal(invited.statusCode, 201, invited.body);
    assert.match(invited.json().data.url, /\/dashboard\/invitations\//);
    const unknown = await h.app.inject({
      method: 'POST',
      url: '/admin/v1/organizations/org_00000000000000000000000000/invitations',
      headers: ADMIN,
      payload: { email: 'dev@acme.example' },
    });
    assert.equal(unknown.statusCode, 404);
    const noToken = await h.app.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${tenant.orgId}/invitations`,
      payload: { email: 'dev@acme.example' },
    });
    assert.equal(noToken.statusCode, 401);
  });
});
