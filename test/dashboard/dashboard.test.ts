import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createOrganizationWithOwner } from '../../src/services/members.ts';
import { forEachDialect, useHarness, type Harness } from '../support/harness.ts';

/**
 * The dashboard over HTTP (issue 28), on both databases: invitations, password sign-in and its
 * rate limit, cookies, CSRF, roles enforced on the server, and every action in the audit log.
 * The browser test (dashboard-browser.test.ts) drives the same pages in Chromium.
 */
const PASSWORD = 'correct horse battery staple';

/** A browser's cookie jar and the form token of the last page, for inject. */
class Client {
  cookies = new Map<string, string>();
  csrf = '';
  constructor(private readonly h: Harness) {}

  async request(method: 'GET' | 'POST', url: string, form?: Record<string, string | string[]>) {
    const body = form
      ? new URLSearchParams(
          Object.entries(form).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]])),
        ).toString()
      : undefined;
    const res = await this.h.app.inject({
      method,
      url,
      headers: {
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      payload: body,
    });
    for (const header of [res.headers['set-cookie'] ?? []].flat()) {
      const [pair] = header.split(';');
      const [name, value] = [pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1)];
      if (value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(res.body);
    if (token) this.csrf = token[1]!;
    return res;
  }
  get = (url: string) => this.request('GET', url);
  post = (url: string, form: Record<string, string | string[]> = {}) =>
    this.request('POST', url, { _csrf: this.csrf, ...form });
}

const path = (url: string) => new URL(url).pathname;
const location = (res: LightMyRequestResponse) => res.headers.location as string;

forEachDialect('dashboard over HTTP', (dialect) => {
  let h: Harness;
  useHarness(dialect, (ready) => {
    h = ready;
  });

  async function owner() {
    const created = await createOrganizationWithOwner(h.services, {
      name: 'Campus Bookshop',
      environment: 'sandbox',
      ownerEmail: `Owner-${Math.random().toString(36).slice(2)}@Shop.example`,
    });
    const client = new Client(h);
    const page = await client.get(path(created.ownerInvitation.url));
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Join as owner/);
    const joined = await client.request('POST', path(created.ownerInvitation.url), { password: PASSWORD });
    assert.equal(joined.statusCode, 303, joined.body);
    assert.equal(location(joined), '/dashboard/apps');
    assert.equal((await client.get('/dashboard/apps')).statusCode, 200);
    return { client, created, email: created.ownerInvitation.email };
  }

  test('an invitation link makes a member once; the cookie is HttpOnly, SameSite and Secure', async () => {
    const created = await createOrganizationWithOwner(h.services, {
      name: 'Org',
      environment: 'sandbox',
      ownerEmail: 'first@shop.example',
    });
    const client = new Client(h);
    const short = await client.request('POST', path(created.ownerInvitation.url), { password: 'short' });
    assert.equal(short.statusCode, 400);
    const joined = await client.request('POST', path(created.ownerInvitation.url), { password: PASSWORD });
    const cookie = [joined.headers['set-cookie']].flat().join('\n');
    assert.match(
      cookie,
      /^__Host-matricula_dashboard=[\w-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Lax; Secure$/m,
    );
    const again = await new Client(h).get(path(created.ownerInvitation.url));
    assert.equal(again.statusCode, 404, 'used once');
    const apps = await client.get('/dashboard/apps');
    assert.equal(apps.statusCode, 200);
    assert.match(apps.body, /Campus|Org \(sandbox\)/);
  });

  test('sign-in with the password; a wrong one is refused; attempts are rate limited', async () => {
    const { email } = await owner();
    const client = new Client(h);
    assert.equal((await client.get('/dashboard/apps')).statusCode, 303, 'not signed in: to the sign-in page');
    await client.get('/dashboard/sign-in');
    const wrong = await client.post('/dashboard/sign-in', { email, password: 'not the password at all' });
    assert.equal(wrong.statusCode, 401);
    assert.match(wrong.body, /do not match/);
    const noToken = await client.request('POST', '/dashboard/sign-in', { email, password: PASSWORD });
    assert.equal(noToken.statusCode, 403, 'a sign-in form without its token is refused');
    const ok = await client.post('/dashboard/sign-in', { email: email.toUpperCase(), password: PASSWORD });
    assert.equal(ok.statusCode, 303);
    assert.equal((await client.get('/dashboard/apps')).statusCode, 200);

    const attacker = new Client(h);
    await attacker.get('/dashboard/sign-in');
    const codes: number[] = [];
    for (let i = 0; i < 12; i++)
      codes.push((await attacker.post('/dashboard/sign-in', { email, password: `guess ${i} guess` })).statusCode);
    assert.deepEqual(codes.slice(0, 8), Array(8).fill(401));
    assert.equal(codes.at(-1), 429);
  });

  test('an owner creates an application and a key (shown once); every action is audited', async () => {
    const { client } = await owner();
    const created = await client.post('/dashboard/apps', { name: 'Checkout' });
    assert.equal(created.statusCode, 303);
    const appPath = location(created);
    const page = await client.get(appPath);
    assert.match(page.body, /<h1>Checkout<\/h1>/);
    assert.match(page.body, /Funnel/);
    const key = await client.post(`${appPath}/keys`, { name: 'checkout server' });
    assert.equal(key.statusCode, 200);
    const secret = /<code id="secret-value">(sk_test_[^<]+)<\/code>/.exec(key.body)?.[1];
    assert.ok(secret, 'the secret is on the page');
    const api = await h.app.inject({
      method: 'GET',
      url: '/org/v1/apps',
      headers: { authorization: `Bearer ${secret}` },
    });
    assert.equal(api.statusCode, 200, 'the key works against the API');
    assert.equal((await client.get(appPath)).body.includes(secret), false, 'shown once');
    const audit = await client.get('/dashboard/audit');
    for (const action of ['member.join', 'application.create', 'key.create'])
      assert.match(audit.body, new RegExp(action.replace('.', '\\.')));
  });

  test('CSRF: a state change without the token, or from another origin, is refused', async () => {
    const { client } = await owner();
    const noToken = await client.request('POST', '/dashboard/apps', { name: 'Forged' });
    assert.equal(noToken.statusCode, 403);
    const wrongToken = await client.request('POST', '/dashboard/apps', { name: 'Forged', _csrf: 'x'.repeat(43) });
    assert.equal(wrongToken.statusCode, 403);
    const foreign = await h.app.inject({
      method: 'POST',
      url: '/dashboard/apps',
      headers: {
        cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: new URLSearchParams({ name: 'Forged', _csrf: client.csrf }).toString(),
    });
    assert.equal(foreign.statusCode, 403);
    const apps = await client.get('/dashboard/apps');
    assert.equal(apps.body.includes('Forged'), false);
  });

  test('a viewer reads but cannot create a key: 403 from the server', async () => {
    const { client, created } = await owner();
    const invited = await client.post('/dashboard/members', { email: 'viewer@shop.example', role: 'viewer' });
    assert.equal(invited.statusCode, 200);
    const url = /<code id="invitation-url">([^<]+)<\/code>/.exec(invited.body)![1]!;
    const viewer = new Client(h);
    assert.equal((await viewer.request('POST', path(url), { password: PASSWORD })).statusCode, 303);
    const appPath = `/dashboard/apps/${created.application.id}`;
    assert.equal((await viewer.get(appPath)).statusCode, 200);
    const refused = await viewer.post(`${appPath}/keys`, { name: 'sneaky' });
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /viewer/);
    const invite = await viewer.post('/dashboard/members', { email: 'x@shop.example', role: 'owner' });
    assert.equal(invite.statusCode, 403);
  });

  test('another organization does not exist for a member', async () => {
    const { client } = await owner();
    const other = await h.bootstrap('sandbox');
    assert.equal((await client.get(`/dashboard/apps/${other.appId}`)).statusCode, 404);
  });
});
