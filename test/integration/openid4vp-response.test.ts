import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { expireDueSessions } from '../../src/services/expiry.ts';
import type { Harness, Tenant } from '../support/harness.ts';
import type { ExportedCredential } from '../support/openid4vp-holder.ts';
import {
  answer,
  createSession,
  encryptedTo,
  eventTypes,
  exportCredential,
  listeningHarness,
  postResponse,
  readSession,
  resolve,
  sameDevice,
} from '../support/openid4vp-flows.ts';
import { forEachDialect } from '../support/harness.ts';

/**
 * The response endpoint as OpenID4VP 1.0 §8 has it: a wallet's error response (plain or
 * encrypted) is processed (200) without consenting the session, `access_denied` declines it; and
 * HAIP's same-device rule: the session completes only when the wallet's redirect, with the right
 * response_code, arrives in the browser that opened the portal.
 */
forEachDialect('OpenID4VP response endpoint: error responses and same-device binding', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let anchors: string[];
  let credential: ExportedCredential;

  before(async () => {
    const started = await listeningHarness(dialect);
    ({ h, tenant } = started);
    anchors = [await (await fetch(`${started.baseUrl}/openid4vp/v1/certificate`)).text()];
    credential = await exportCredential(h, started.baseUrl, '--level', 'postgraduate');
  });
  after(() => h.close());

  const status = async (sessionId: string) => (await readSession(h, tenant, sessionId)).status;

  /** The student's browser opens the portal page (and keeps its cookie), then the wallet answers same-device. */
  const portalThenSameDeviceAnswer = async (session: { sessionId: string; openid4vpUri: string }) => {
    const page = await h.app.inject({ url: `/verify/${session.sessionId}` });
    const setCookie = String(page.headers['set-cookie']);
    const resolved = await resolve(sameDevice(session.openid4vpUri), anchors);
    const reply = await answer(resolved, anchors, credential, h.clock.now());
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    return { setCookie, cookie: setCookie.split(';')[0]!, redirect: new URL(String(reply.body.redirect_uri)) };
  };

  test('an encrypted access_denied declines the session, like a plain one', async () => {
    const session = await createSession(h, tenant);
    const resolved = await resolve(session.openid4vpUri, anchors);
    const reply = await postResponse(resolved, {
      response: await encryptedTo(resolved, {
        error: 'access_denied',
        state: resolved.authorizationRequestPayload.state,
      }),
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(await status(session.sessionId), 'declined');
    assert.deepEqual(await eventTypes(h, tenant, session.sessionId), ['consent.declined']);
  });

  test('other wallet errors, plain or encrypted, are processed (200): no consent, the session stays open', async () => {
    const session = await createSession(h, tenant);
    const resolved = await resolve(session.openid4vpUri, anchors);
    const state = resolved.authorizationRequestPayload.state;
    const replies = [
      await postResponse(resolved, { error: 'invalid_request', error_description: 'no matching credential' }),
      await postResponse(resolved, { error: 'wallet_unavailable' }),
      await postResponse(resolved, { response: await encryptedTo(resolved, { error: 'wallet_unavailable', state }) }),
      await postResponse(resolved, {
        response: await encryptedTo(resolved, { error: 'vp_formats_not_supported', state }),
      }),
    ];
    for (const reply of replies) assert.deepEqual([reply.status, reply.body], [200, {}]);
    assert.equal(await status(session.sessionId), 'pending', 'the student approved nothing');
    assert.deepEqual(await eventTypes(h, tenant, session.sessionId), []);
    const metrics = (await h.services.metrics.scrape()).body;
    assert.match(metrics, /matricula_openid4vp_wallet_errors_total\{error="wallet_unavailable"\} 2/);
    assert.match(metrics, /matricula_openid4vp_wallet_errors_total\{error="invalid_request"\} 1/);

    // Another try with a credential completes it as usual.
    const done = await answer(await resolve(session.openid4vpUri, anchors), anchors, credential, h.clock.now());
    assert.equal(done.status, 200, JSON.stringify(done.body));
    const read = await readSession(h, tenant, session.sessionId);
    assert.deepEqual([read.status, read.result?.verified], ['completed', true]);
    assert.deepEqual(await eventTypes(h, tenant, session.sessionId), ['consent.approved', 'verification.completed']);
  });

  test("same-device: only the redirect with the right code, in the portal's browser, completes the session", async () => {
    const session = await createSession(h, tenant);
    const portal = `/verify/${session.sessionId}`;
    // The student's browser opens the portal page: it is handed the binding cookie.
    const { setCookie, cookie, redirect } = await portalThenSameDeviceAnswer(session);
    assert.match(
      setCookie,
      new RegExp(
        `^matricula_device=[A-Za-z0-9_-]{43}; Path=/verify/${session.sessionId}; Max-Age=\\d+; HttpOnly; SameSite=Lax$`,
      ),
    );
    assert.equal(redirect.pathname, portal);
    const back = `${redirect.pathname}${redirect.search}`;
    assert.equal(await status(session.sessionId), 'consented', 'not complete before the redirect comes back');

    // The redirect in another browser (no cookie): nothing completes, and no cookie is handed out.
    const elsewhere = await h.app.inject({ url: back });
    assert.equal(elsewhere.statusCode, 200);
    assert.equal(elsewhere.headers['set-cookie'], undefined);
    assert.equal(await status(session.sessionId), 'consented');
    // The right browser with a wrong code, or no code at all: still open.
    await h.app.inject({ url: `${portal}?response_code=wrong`, headers: { cookie } });
    await h.app.inject({ url: portal, headers: { cookie } });
    assert.equal(await status(session.sessionId), 'consented');
    assert.deepEqual(await eventTypes(h, tenant, session.sessionId), ['consent.approved']);

    const home = await h.app.inject({ url: back, headers: { cookie } });
    assert.equal(home.statusCode, 200);
    assert.match(home.body, /data-current="verified"/);
    const read = await readSession(h, tenant, session.sessionId);
    assert.deepEqual([read.status, read.result?.verified, read.result?.protocol], ['completed', true, 'openid4vp']);
    assert.deepEqual(await eventTypes(h, tenant, session.sessionId), ['consent.approved', 'verification.completed']);
  });

  test('same-device: an answer whose redirect never comes back expires, and nothing of it is kept', async () => {
    const session = await createSession(h, tenant);
    const { cookie, redirect } = await portalThenSameDeviceAnswer(session);
    const held = () =>
      h.store.db
        .selectFrom('openid4vp_held_results')
        .select('session_id')
        .where('session_id', '=', session.sessionId)
        .execute();
    assert.equal((await held()).length, 1, 'the judged answer waits for the redirect');

    h.clock.advance(301_000);
    await expireDueSessions(h.services);
    assert.equal(await status(session.sessionId), 'expired');
    assert.deepEqual(await held(), []);
    await h.app.inject({ url: `${redirect.pathname}${redirect.search}`, headers: { cookie } });
    assert.equal(await status(session.sessionId), 'expired');
  });

  test('same-device: a declined request sends the student back to the portal, without a code', async () => {
    const session = await createSession(h, tenant);
    const resolved = await resolve(sameDevice(session.openid4vpUri), anchors);
    const reply = await postResponse(resolved, { error: 'access_denied' });
    assert.equal(reply.status, 200);
    const redirect = new URL(String(reply.body.redirect_uri));
    assert.equal(redirect.pathname, `/verify/${session.sessionId}`);
    assert.equal(redirect.searchParams.get('response_code'), null);
    assert.equal(await status(session.sessionId), 'declined');
  });
});
