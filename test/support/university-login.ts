import type { FastifyBaseLogger } from 'fastify';
import assert from 'node:assert/strict';
import { addIdentityProvider } from '../../src/services/sso/registry.ts';
import { startHarness, type DialectName, type Harness, type Tenant } from './harness.ts';
import { loopbackServer } from './server.ts';
import { createSession, type CreatedSession } from './sessions.ts';
import { startTestIdp, type TestIdp, type TestIdpOptions } from './saml-idp.ts';

/**
 * The app listening on loopback (its ACS must be reachable over HTTP by the browser's post), a
 * sandbox tenant, and helpers that act as the student's browser: start a login, follow the
 * redirect to the IdP, and post the IdP's answer back with the binding cookie.
 */
export interface LoginWorld {
  h: Harness;
  tenant: Tenant;
  origin: string;
  spMetadata: string;
  close(): Promise<void>;
}

export async function startLoginWorld(
  dialect: DialectName,
  config: Record<string, string> = {},
  options: { logger?: FastifyBaseLogger } = {},
): Promise<LoginWorld> {
  const loopback = await loopbackServer();
  const h = await startHarness(dialect, { BASE_URL: loopback.origin, PORT: String(loopback.port), ...config }, options);
  await loopback.serve(h.app);
  // samlify stamps responses with the system clock; the service checks them on its own.
  h.clock.set(new Date());
  const tenant = await h.bootstrap('sandbox');
  const spMetadata = await (await fetch(`${loopback.origin}/saml/v1/metadata`)).text();
  return { h, tenant, origin: loopback.origin, spMetadata, close: () => h.close() };
}

/** Starts a test IdP and registers it for sandbox sessions. */
export async function registeredIdp(world: LoginWorld, options: TestIdpOptions = {}): Promise<TestIdp> {
  const idp = await startTestIdp(world.spMetadata, options);
  const added = await addIdentityProvider(world.h.services, {
    environment: 'sandbox',
    samlMetadata: idp.metadataXml,
    name: 'Test University',
    country: 'NL',
  });
  assert.ok(added.ok, JSON.stringify(added));
  return idp;
}

/** A browser: its cookie jar is the binding cookie. */
export class TestBrowser {
  cookie = '';

  async start(world: LoginWorld, session: CreatedSession, idp: string): Promise<Response> {
    const url = `${world.origin}/sso/v1/sessions/${session.sessionId}/start?nonce=${encodeURIComponent(session.challengeNonce)}&idp=${encodeURIComponent(idp)}`;
    const res = await fetch(url, { redirect: 'manual', headers: this.cookie ? { cookie: this.cookie } : {} });
    const set = res.headers.get('set-cookie');
    if (set) this.cookie = set.split(';')[0]!;
    return res;
  }

  async postToAcs(world: LoginWorld, samlResponse: string, relayState?: string): Promise<Response> {
    const body = new URLSearchParams({ SAMLResponse: samlResponse, ...(relayState ? { RelayState: relayState } : {}) });
    return fetch(`${world.origin}/saml/v1/acs`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(this.cookie ? { cookie: this.cookie } : {}) },
      body,
    });
  }

  /** Logs in at the IdP's page as `account` and returns the form the IdP's page posts to our ACS. */
  async loginAt(
    location: string,
    account: 'student' | 'staff',
  ): Promise<{ action: string; SAMLResponse: string; RelayState: string }> {
    const page = await (await fetch(location)).text();
    const ticket = /name="ticket" value="([^"]+)"/.exec(page)?.[1];
    assert.ok(ticket, `no login form at the IdP: ${page.slice(0, 300)}`);
    const answer = await (
      await fetch(new URL('/login', location), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ticket, account }),
      })
    ).text();
    const values = Object.fromEntries([...answer.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const action = /action="([^"]+)"/.exec(answer)?.[1] ?? '';
    return { action, SAMLResponse: values.SAMLResponse ?? '', RelayState: values.RelayState ?? '' };
  }
}

/**
 * A sandbox session, the service clock first brought to the system's: the IdPs stamp their
 * assertions with the system clock, and the service allows 60 s of skew.
 */
export async function sandboxSession(world: LoginWorld, body: Record<string, unknown> = {}): Promise<CreatedSession> {
  world.h.clock.set(new Date());
  return createSession(world.h, world.tenant, body);
}
