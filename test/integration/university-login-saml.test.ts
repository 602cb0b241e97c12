import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { seedSandboxIdentityProvider } from '../../src/services/sso/sandbox-idp.ts';
import { forEachDialect } from '../support/harness.ts';
import { buildPresentation, consent, getSession, submit } from '../support/sessions.ts';
import type { TestIdp } from '../support/saml-idp.ts';
import {
  registeredIdp,
  sandboxSession,
  startLoginWorld,
  TestBrowser,
  type LoginWorld,
} from '../support/university-login.ts';

forEachDialect('university login over SAML 2.0 (samlify IdP)', (dialect) => {
  let world: LoginWorld;
  let idp: TestIdp;
  let encryptingIdp: TestIdp;
  before(async () => {
    world = await startLoginWorld(dialect);
    idp = await registeredIdp(world);
    encryptingIdp = await registeredIdp(world, { encrypt: true, scope: 'enc.test' });
  });
  after(async () => {
    await idp?.close();
    await encryptingIdp?.close();
    await world?.close();
  });

  test('the SP metadata names our entityID, ACS, keys, and asks only for the affiliation', async () => {
    assert.match(world.spMetadata, new RegExp(`entityID="${world.origin}/saml/v1/metadata"`));
    assert.match(world.spMetadata, new RegExp(`Location="${world.origin}/saml/v1/acs"`));
    assert.match(world.spMetadata, /use="signing"/);
    assert.match(world.spMetadata, /use="encryption"/);
    assert.match(world.spMetadata, /urn:oid:1\.3\.6\.1\.4\.1\.5923\.1\.1\.1\.9/);
    assert.doesNotMatch(world.spMetadata, /mail|givenName|displayName"|eduPersonPrincipalName/i);
  });

  const loginAs = async (target: TestIdp, account: 'student' | 'staff', requiredClaims?: string[]) => {
    const session = await sandboxSession(world, requiredClaims ? { requiredClaims } : {});
    const browser = new TestBrowser();
    const started = await browser.start(world, session, target.entityId);
    assert.equal(started.status, 302, await started.text());
    const location = started.headers.get('location')!;
    assert.ok(location.startsWith(`${target.origin}/sso?SAMLRequest=`), location);
    assert.match(started.headers.get('set-cookie') ?? '', /HttpOnly/);
    const posted = await browser.loginAt(location, account);
    assert.equal(posted.action, `${world.origin}/saml/v1/acs`);
    const answer = await browser.postToAcs(world, posted.SAMLResponse, posted.RelayState);
    return { session, answer };
  };

  test('a student logs in: the session completes verified, protocol saml, university from the registry', async () => {
    const { session, answer } = await loginAs(idp, 'student');
    assert.equal(answer.status, 303, await answer.text());
    assert.equal(answer.headers.get('location'), `${world.origin}/verify/${session.sessionId}`);
    const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
    assert.equal(read.status, 'completed');
    assert.equal(read.result.verified, true);
    assert.equal(read.result.protocol, 'saml');
    assert.equal(read.result.format, 'saml2-assertion');
    assert.deepEqual(read.result.university, { name: 'Test University', domain: 'uni.test', country: 'NL' });
    assert.deepEqual(read.result.claims, {
      is_active_student: true,
      university_domain: 'uni.test',
      academic_level: null,
      valid_until: null,
    });
    const events = (
      await world.h.app.inject({ method: 'GET', url: '/org/v1/events', headers: world.tenant.auth })
    ).json().data as Array<{ event: string; data: { sessionId: string; protocol?: string } }>;
    const completed = events.find(
      (e) => e.event === 'verification.completed' && e.data.sessionId === session.sessionId,
    );
    assert.equal(completed?.data.protocol, 'saml');
  });

  test('staff without a student affiliation: completed, verified false, student_inactive', async () => {
    const { session, answer } = await loginAs(idp, 'staff');
    assert.equal(answer.status, 303);
    const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
    assert.equal(read.result.verified, false);
    assert.equal(read.result.failureReason, 'student_inactive');
    assert.equal(read.result.claims.is_active_student, false);
  });

  test('an encrypted assertion is decrypted with our key and accepted', async () => {
    const { session, answer } = await loginAs(encryptingIdp, 'student');
    assert.equal(answer.status, 303, await answer.text());
    const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
    assert.equal(read.result.verified, true);
    assert.equal(read.result.university.domain, 'enc.test');
  });

  test('the built-in sandbox IdP: its login page posts a signed student assertion, the session is verified', async () => {
    assert.equal(await seedSandboxIdentityProvider(world.h.services), true);
    const session = await sandboxSession(world);
    const browser = new TestBrowser();
    const started = await browser.start(world, session, `${world.origin}/sandbox/idp/v1/metadata`);
    assert.equal(started.status, 302);
    const page = await (await fetch(started.headers.get('location')!)).text();
    assert.match(page, /Sandbox State University/);
    const forms = [...page.matchAll(/name="SAMLResponse" value="([^"]+)"/g)].map((m) => m[1]!);
    assert.equal(forms.length, 2, 'a student and a staff account');
    const answer = await browser.postToAcs(world, forms[0]!, session.sessionId);
    assert.equal(answer.status, 303, await answer.text());
    const read = (await getSession(world.h, world.tenant, session.sessionId)).json().data;
    assert.equal(read.result.verified, true);
    assert.deepEqual(read.result.university, {
      name: 'Sandbox State University',
      domain: 'sandbox-state.example',
      country: 'US',
    });
  });

  test('a session restricted to wallets refuses university login', async () => {
    const session = await sandboxSession(world, { allowedMethods: ['wallet'] });
    const res = await new TestBrowser().start(world, session, idp.entityId);
    assert.equal(res.status, 403);
  });

  test("the application's allowedMethods is its sessions' default; a session's own wins", async () => {
    const { h, tenant } = world;
    const patch = (allowedMethods: string[] | null) =>
      h.app.inject({
        method: 'PATCH',
        url: `/org/v1/apps/${tenant.appId}`,
        headers: tenant.auth,
        payload: { allowedMethods },
      });
    const patched = await patch(['wallet']);
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json().data.allowedMethods, ['wallet']);
    try {
      assert.equal((await new TestBrowser().start(world, await sandboxSession(world), idp.entityId)).status, 403);
      const own = await sandboxSession(world, { allowedMethods: ['university_login'] });
      assert.equal((await new TestBrowser().start(world, own, idp.entityId)).status, 302);
    } finally {
      assert.equal((await patch(null)).json().data.allowedMethods, null);
    }
  });

  test('a session restricted to university login refuses a wallet presentation', async () => {
    const session = await sandboxSession(world, { allowedMethods: ['university_login'] });
    assert.equal((await consent(world.h, session)).statusCode, 200);
    const presentation = await buildPresentation(world.h, 'sd-jwt-vc', { nonce: session.challengeNonce });
    const res = await submit(world.h, session, 'sd-jwt-vc', presentation);
    assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.json().error.code, 'forbidden');
  });

  test("the portal's search lists the session's environment's IdPs by name, domain or country", async () => {
    const session = await sandboxSession(world);
    const search = async (q: string) =>
      (
        await world.h.app.inject({
          method: 'GET',
          url: `/sso/v1/sessions/${session.sessionId}/identity-providers?q=${encodeURIComponent(q)}`,
        })
      ).json().data as Array<{ id: string; domain: string }>;
    assert.deepEqual(
      (await search('enc.test')).map((p) => p.domain),
      ['enc.test'],
    );
    assert.ok((await search('test university nl')).length >= 2);
    assert.deepEqual(await search('no such university'), []);
    const unknown = await world.h.app.inject({ method: 'GET', url: '/sso/v1/sessions/sess_nope/identity-providers' });
    assert.equal(unknown.statusCode, 404);
  });

  test('an unknown IdP, a wrong nonce: no redirect', async () => {
    const session = await sandboxSession(world);
    assert.equal((await new TestBrowser().start(world, session, 'https://nobody.example/idp')).status, 404);
    assert.equal(
      (await new TestBrowser().start(world, { ...session, challengeNonce: 'nonce_wrong' }, idp.entityId)).status,
      404,
    );
  });
});
