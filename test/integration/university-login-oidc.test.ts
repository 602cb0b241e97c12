import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Writable } from 'node:stream';
import { generateKeyPair } from 'jose';
import { createLogger } from '../../src/logging.ts';
import { runCli } from '../../src/cli/main.ts';
import { addIdentityProvider } from '../../src/services/sso/registry.ts';
import { forEachDialect } from '../support/harness.ts';
import { dumpDatabase } from '../support/dump.ts';
import {
  OidcBrowser,
  OP_CLIENT_ID,
  OP_CLIENT_SECRET,
  startTestOp,
  type Tamper,
  type TestOp,
} from '../support/oidc-provider.ts';
import { getSession } from '../support/sessions.ts';
import type { CreatedSession } from '../support/sessions.ts';
import { sandboxSession, startLoginWorld, type LoginWorld } from '../support/university-login.ts';

const ADMIN_TOKEN = 'admin-token-oidc-0123456789abcdef';
const SECRETS_KEY = 'fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210';

/**
 * University login over OpenID Connect, end to end over HTTP: the service on loopback, panva's
 * oidc-provider as the university (registered through the admin API), and a browser with a cookie
 * jar between them. Every refusal names its reason and leaves the session unverified.
 */
forEachDialect('university login over OpenID Connect (oidc-provider)', (dialect) => {
  let world: LoginWorld;
  let op: TestOp;
  let idpId: string;
  const logLines: string[] = [];
  const logger = createLogger(
    { logLevel: 'trace', logFormat: 'json' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  );
  before(async () => {
    world = await startLoginWorld(
      dialect,
      { ADMIN_TOKEN, IDP_SECRETS_KEY: SECRETS_KEY, ACCESS_LOG: 'true' },
      { logger },
    );
    op = await startTestOp(`${world.origin}/oidc/v1/callback`);
    const res = await fetch(`${world.origin}/admin/v1/identity-providers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        environment: 'sandbox',
        oidcIssuer: op.issuer,
        clientId: OP_CLIENT_ID,
        clientSecret: OP_CLIENT_SECRET,
        domain: 'uni.test',
        country: 'NL',
        name: 'OIDC Test University',
      }),
    });
    const body = await res.text();
    assert.equal(res.status, 201, body);
    assert.ok(!body.includes(OP_CLIENT_SECRET), 'the secret is never returned');
    idpId = JSON.parse(body).data.id;
  });
  after(async () => {
    await op?.close();
    await world?.close();
  });

  const callbackPrefix = () => `${world.origin}/oidc/v1/callback`;

  /** A session and a browser that started its login and signed in at the provider: the callback URL, not yet visited. */
  const signedIn = async (account = 'student', browser = new OidcBrowser(), session?: CreatedSession) => {
    session ??= await sandboxSession(world);
    const started = await browser.get(
      `${world.origin}/sso/v1/sessions/${session.sessionId}/start?nonce=${encodeURIComponent(session.challengeNonce)}&idp=${encodeURIComponent(op.issuer)}`,
    );
    assert.equal(started.status, 302, await started.text());
    const location = started.headers.get('location')!;
    assert.ok(location.startsWith(`${op.issuer}/auth?`), location);
    const callback = await browser.loginAt(location, account, callbackPrefix());
    return { session, browser, callback, location };
  };

  const assertRefused = async (res: Response, reason: string, sessionId: string) => {
    const page = await res.text();
    assert.equal(res.status, 400, page.slice(0, 400));
    assert.equal(res.headers.get('x-matricula-rejection-reason'), reason, page.slice(0, 600));
    const read = (await getSession(world.h, world.tenant, sessionId)).json().data;
    assert.ok(read.status !== 'completed' || read.result.verified === false, 'the session must not be verified');
  };

  const refusedWith = async (reason: string, tamper: Tamper) => {
    const { session, browser, callback } = await signedIn();
    op.tamper = tamper;
    try {
      await assertRefused(await browser.get(callback), reason, session.sessionId);
    } finally {
      op.tamper = undefined;
    }
  };

  test('the authorization request: code flow, PKCE S256, state, a nonce, and no scope beyond the affiliation', async () => {
    const { location } = await signedIn();
    const params = new URL(location).searchParams;
    assert.equal(params.get('response_type'), 'code');
    assert.equal(params.get('client_id'), OP_CLIENT_ID);
    assert.equal(params.get('redirect_uri'), callbackPrefix());
    assert.equal(params.get('code_challenge_method'), 'S256');
    assert.match(params.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.match(params.get('nonce') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.ok(params.get('state'));
    assert.deepEqual(params.get('scope')!.split(' ').sort(), ['eduperson_scoped_affiliation', 'openid']);
    assert.doesNotMatch(location, /profile|email/);
  });

  test('a student signs in: the session completes verified, protocol oidc, university from the registry', async () => {
    const sub = 'student.sub-5e0c1d9a';
    const { session, browser, callback } = await signedIn(sub);
    const res = await browser.get(callback);
    assert.equal(res.status, 303, await res.text());
    assert.equal(res.headers.get('location'), `${world.origin}/verify/${session.sessionId}`);
    const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
    assert.equal(read.status, 'completed');
    assert.equal(read.result.verified, true);
    assert.equal(read.result.protocol, 'oidc');
    assert.equal(read.result.format, 'oidc-id-token');
    assert.deepEqual(read.result.university, { name: 'OIDC Test University', domain: 'uni.test', country: 'NL' });
    assert.deepEqual(read.result.claims, {
      is_active_student: true,
      university_domain: 'uni.test',
      academic_level: null,
      valid_until: null,
    });
    const code = new URL(callback).searchParams.get('code')!;
    const logs = logLines.join('');
    assert.ok(logs.includes('/oidc/v1/callback'), 'the access log has the callback');
    for (const secret of [sub, code, op.idTokens.at(-1)!, OP_CLIENT_SECRET, session.challengeNonce])
      assert.ok(!logs.includes(secret), `the logs hold ${secret.slice(0, 12)}…`);
    const dump = await dumpDatabase(world.h.testStore);
    assert.ok(!dump.includes(sub), 'the sub is not stored');
    assert.ok(!dump.includes(op.idTokens.at(-1)!), 'the ID token is not stored');
    assert.ok(!dump.includes(OP_CLIENT_SECRET), 'the client secret is sealed');
  });

  test('staff without a student affiliation: completed, verified false, student_inactive', async () => {
    const { session, browser, callback } = await signedIn('staff');
    assert.equal((await browser.get(callback)).status, 303);
    const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
    assert.equal(read.result.verified, false);
    assert.equal(read.result.failureReason, 'student_inactive');
    assert.equal(read.result.claims.is_active_student, false);
  });

  test("the portal's search lists OpenID Connect providers too", async () => {
    const session = await sandboxSession(world);
    const res = await world.h.app.inject({
      method: 'GET',
      url: `/sso/v1/sessions/${session.sessionId}/identity-providers?q=oidc`,
    });
    assert.deepEqual(
      res.json().data.map((p: { id: string }) => p.id),
      [idpId],
    );
  });

  test('matricula idps add --oidc-issuer, on the database and through the admin API: the secret is never printed', async () => {
    const out: string[] = [];
    const ctx = {
      env: { MATRICULA_ADMIN_TOKEN: ADMIN_TOKEN },
      stdout: (t: string) => out.push(t),
      stderr: (t: string) => out.push(t),
      clock: world.h.clock,
      config: () => world.h.config,
      openStore: async () => world.h.store,
    };
    const add = (issuer: string, ...extra: string[]) =>
      runCli(
        [
          'idps',
          'add',
          '--oidc-issuer',
          issuer,
          '--client-id',
          'cli-client',
          '--client-secret',
          'cli-secret-9d8c7b6a',
          '--domain',
          'cli.uni.test',
          '--country',
          'NL',
          '--affiliation-claim',
          'affiliation',
          '--environment',
          'sandbox',
          '--json',
          ...extra,
        ],
        ctx,
      );
    assert.equal(await add('https://login.cli.uni.test'), 0, out.join('\n'));
    const local = JSON.parse(out.at(-1)!);
    assert.equal(local.protocol, 'oidc');
    assert.deepEqual(local.oidc, { clientId: 'cli-client', affiliationClaim: 'affiliation' });
    assert.equal(local.clientSecretSet, true);
    assert.equal(await add('https://login2.cli.uni.test', '--admin-url', world.origin), 0, out.join('\n'));
    assert.equal(JSON.parse(out.at(-1)!).entityId, 'https://login2.cli.uni.test');
    assert.equal(await runCli(['idps', 'show', local.id], ctx), 0);
    assert.match(out.at(-1)!, /secret: set \(sealed\)/);
    assert.ok(!out.join('\n').includes('cli-secret-9d8c7b6a'), 'the secret is never printed');
    for (const id of [local.id, JSON.parse(out.find((l) => l.includes('login2'))!).id])
      assert.equal(await runCli(['idps', 'remove', id], ctx), 0);
  });

  test('a wrong nonce', () => refusedWith('nonce_mismatch', { claims: (c) => ({ ...c, nonce: 'another-login' }) }));

  test('a wrong audience', () =>
    refusedWith('audience_mismatch', { claims: (c) => ({ ...c, aud: 'another-client' }) }));

  test('an authorized party other than us', () =>
    refusedWith('audience_mismatch', { claims: (c) => ({ ...c, aud: [OP_CLIENT_ID, 'other'], azp: 'other' }) }));

  test('another issuer', () =>
    refusedWith('untrusted_issuer', { claims: (c) => ({ ...c, iss: 'http://127.0.0.1:1/evil' }) }));

  test('an expired ID token', () =>
    refusedWith('stale_presentation', {
      claims: (c) => ({ ...c, iat: Math.floor(Date.now() / 1000) - 3600, exp: Math.floor(Date.now() / 1000) - 120 }),
    }));

  test('an ID token expired by the service clock (not the system one)', async () => {
    const { session, browser, callback } = await signedIn();
    op.tamper = { claims: (c) => ({ ...c, exp: Math.floor(Date.now() / 1000) + 30 }) };
    world.h.clock.advance(120_000);
    try {
      await assertRefused(await browser.get(callback), 'stale_presentation', session.sessionId);
    } finally {
      op.tamper = undefined;
    }
  });

  test("a signature by another key (the provider's kid)", async () =>
    refusedWith('invalid_signature', {
      signingKey: (await generateKeyPair('RS256')).privateKey,
    }));

  test("an affiliation scoped outside the provider's domain", async () => {
    const { session, browser, callback } = await signedIn('outsider');
    await assertRefused(await browser.get(callback), 'untrusted_issuer', session.sessionId);
  });

  test('a replayed callback is refused as a replay, before the code is redeemed again', async () => {
    const { session, browser, callback } = await signedIn();
    assert.equal((await browser.get(callback)).status, 303);
    const redeemed = op.tokenRequests;
    const replay = await browser.get(callback);
    assert.equal(replay.status, 400);
    assert.equal(replay.headers.get('x-matricula-rejection-reason'), 'assertion_replayed');
    assert.equal(op.tokenRequests, redeemed, 'the token endpoint was not called again');
    assert.equal((await getSession(world.h, world.tenant, session.sessionId)).json().data.result.verified, true);
  });

  test("another session's answer, in another browser", async () => {
    const mine = await signedIn();
    const theirs = await signedIn();
    const redeemed = op.tokenRequests;
    await assertRefused(await mine.browser.get(theirs.callback), 'nonce_mismatch', theirs.session.sessionId);
    assert.equal(op.tokenRequests, redeemed, 'refused by the binding cookie, before the code is redeemed');
  });

  test("a code of another login under this login's state (code injection): the PKCE verifier does not match", async () => {
    const browser = new OidcBrowser();
    const mine = await signedIn('student', browser);
    const theirs = await signedIn('student', browser);
    const injected = new URL(mine.callback);
    injected.searchParams.set('code', new URL(theirs.callback).searchParams.get('code')!);
    const redeemed = op.tokenRequests;
    const issued = op.idTokens.length;
    await assertRefused(await browser.get(injected.href), 'nonce_mismatch', mine.session.sessionId);
    assert.equal(op.idTokens.length, issued, 'no ID token was issued for the injected code');
    assert.equal(
      op.tokenRequests,
      redeemed + 1,
      'refused by the provider: the code is bound to the other PKCE challenge',
    );
  });

  test('a state that names no login request', async () => {
    const { session, browser, callback } = await signedIn();
    const forged = new URL(callback);
    forged.searchParams.set('state', '_never-asked');
    await assertRefused(await browser.get(forged.href), 'nonce_mismatch', session.sessionId);
  });

  test("the provider's error answer (the student declined): refused, the session left open", async () => {
    const { session, browser, callback } = await signedIn();
    const declined = new URL(callbackPrefix());
    declined.searchParams.set('state', new URL(callback).searchParams.get('state')!);
    declined.searchParams.set('error', 'access_denied');
    await assertRefused(await browser.get(declined.href), 'malformed_presentation', session.sessionId);
    assert.equal((await getSession(world.h, world.tenant, session.sessionId)).json().data.status, 'pending');
    assert.equal((await browser.get(callback)).status, 303, 'the real answer is still accepted');
  });

  test('a provider that cannot be reached: the start answers 503, no redirect', async () => {
    const added = await addIdentityProvider(world.h.services, {
      environment: 'sandbox',
      oidcIssuer: 'http://127.0.0.1:9/down',
      clientId: 'nobody',
      domain: 'down.test',
      country: 'NL',
    });
    assert.ok(added.ok, JSON.stringify(added));
    const session = await sandboxSession(world);
    const res = await new OidcBrowser().get(
      `${world.origin}/sso/v1/sessions/${session.sessionId}/start?nonce=${encodeURIComponent(session.challengeNonce)}&idp=${added.provider.id}`,
    );
    assert.equal(res.status, 503, await res.text());
  });

  test('a client secret that cannot be unsealed (IDP_SECRETS_KEY changed): the start answers 503', async () => {
    const added = await addIdentityProvider(world.h.services, {
      environment: 'sandbox',
      oidcIssuer: op.issuer + '/resealed',
      clientId: OP_CLIENT_ID,
      clientSecret: OP_CLIENT_SECRET,
      domain: 'resealed.test',
      country: 'NL',
    });
    assert.ok(added.ok, JSON.stringify(added));
    await world.h.store.db
      .updateTable('identity_providers')
      .set({ client_secret_sealed: 'v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })
      .where('id', '=', added.provider.id)
      .execute();
    const session = await sandboxSession(world);
    const res = await new OidcBrowser().get(
      `${world.origin}/sso/v1/sessions/${session.sessionId}/start?nonce=${encodeURIComponent(session.challengeNonce)}&idp=${added.provider.id}`,
    );
    assert.equal(res.status, 503, await res.text());
  });
});
