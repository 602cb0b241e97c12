import assert from 'node:assert/strict';
import { CompactEncrypt, importJWK, type JWK } from 'jose';
import type { ResolvedOpenid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import { runCli } from '../../src/cli/main.ts';
import type { CliContext } from '../../src/cli/command.ts';
import { startHarness, type DialectName, type Harness, type Tenant } from './harness.ts';
import { holderClient, presentFromExport, submit, uriParameters, type ExportedCredential } from './openid4vp-holder.ts';
import { loopbackServer } from './server.ts';

/**
 * What the OpenID4VP suites share: a harness listening on loopback (its BASE_URL is its own
 * address, so a holder can fetch the request over HTTP), a sandbox credential exported by the
 * wallet simulator, and the wallet's side of a few exchanges built with jose and the holder.
 */
export async function listeningHarness(
  dialect: DialectName,
  overrides: Record<string, string> = {},
): Promise<{ h: Harness; tenant: Tenant; baseUrl: string }> {
  const main = await loopbackServer();
  const h = await startHarness(dialect, { BASE_URL: main.origin, PORT: String(main.port), ...overrides });
  // The holder's library checks the request object's exp against the real time: start there.
  h.clock.advance(Math.max(0, Date.now() - h.clock.now().getTime()));
  await main.serve(h.app);
  return { h, tenant: await h.bootstrap('sandbox'), baseUrl: main.origin };
}

/** `matricula wallet credential --json` for the service at `baseUrl`, on the harness clock. */
export async function exportCredential(h: Harness, baseUrl: string, ...flags: string[]): Promise<ExportedCredential> {
  const out: string[] = [];
  const ctx: CliContext = {
    env: { BASE_URL: baseUrl },
    stdout: (text) => out.push(text),
    stderr: () => {},
    clock: h.clock,
    openStore: () => Promise.reject(new Error('not needed')),
    config: () => h.config,
  };
  assert.equal(await runCli(['wallet', 'credential', '--json', ...flags], ctx), 0);
  return JSON.parse(out.join('\n')) as ExportedCredential;
}

export interface OpenSession {
  sessionId: string;
  openid4vpUri: string;
  challengeNonce: string;
}

export async function createSession(h: Harness, tenant: Tenant): Promise<OpenSession> {
  const res = await h.app.inject({
    method: 'POST',
    url: '/verification/v1/sessions',
    headers: tenant.auth,
    payload: { appId: tenant.appId, purpose: 'Student discount', requiredClaims: ['is_active_student'] },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data as OpenSession;
}

/** The session as its business reads it. */
export async function readSession(h: Harness, tenant: Tenant, sessionId: string) {
  const res = await h.app.inject({ url: `/verification/v1/sessions/${sessionId}`, headers: tenant.auth });
  return res.json().data as { status: string; result?: { verified: boolean; protocol: string } };
}

/** The types of the events recorded for a session, sorted (events of one instant have no order). */
export async function eventTypes(h: Harness, tenant: Tenant, sessionId: string): Promise<string[]> {
  const res = await h.app.inject({ url: '/org/v1/events?limit=100', headers: tenant.auth });
  const events = res.json().data as Array<{ event: string; data: { sessionId?: string } }>;
  return events
    .filter((e) => e.data.sessionId === sessionId)
    .map((e) => e.event)
    .sort();
}

/** The same request in the same-device flow, as the portal's "Open in EU wallet" link has it. */
export function sameDevice(openid4vpUri: string): string {
  const uri = new URL(openid4vpUri);
  uri.searchParams.set('request_uri', `${uri.searchParams.get('request_uri')!}&device=same`);
  return uri.toString();
}

export const resolve = (uri: string, anchors: string[]) =>
  holderClient(anchors).resolveOpenId4vpAuthorizationRequest({ authorizationRequestPayload: uriParameters(uri) });

/** Answers a request with a presentation of `credential`, as the holder's library does. */
export async function answer(
  resolved: ResolvedOpenid4vpAuthorizationRequest,
  anchors: string[],
  credential: ExportedCredential,
  now: Date,
) {
  const presentation = await presentFromExport(credential, resolved, { iat: Math.floor(now.getTime() / 1000) });
  return submit(holderClient(anchors), resolved, { student_credential: [presentation] });
}

/** A direct_post.jwt payload, encrypted with jose alone to the request's key (an error response, say). */
export async function encryptedTo(resolved: ResolvedOpenid4vpAuthorizationRequest, payload: Record<string, unknown>) {
  const jwk = resolved.authorizationRequestPayload.client_metadata?.jwks?.keys[0] as JWK & { kid: string };
  return new CompactEncrypt(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'ECDH-ES', enc: 'A256GCM', kid: jwk.kid })
    .encrypt(await importJWK(jwk, 'ECDH-ES'));
}

/** POSTs a form to the request's response_uri. */
export async function postResponse(resolved: ResolvedOpenid4vpAuthorizationRequest, form: Record<string, string>) {
  const res = await fetch(resolved.authorizationRequestPayload.response_uri as string, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
