import { randomBytes } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransportFuture,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { ApiError } from '../errors.ts';
import type { DashboardSession } from '../store/dashboard-sessions.ts';
import { findMember, type Member } from '../store/members.ts';
import {
  findPasskey,
  insertPasskey,
  passkeysOf,
  recordPasskeyUse,
  takeChallenge,
  insertChallenge,
} from '../store/passkeys.ts';
import type { ServiceDeps } from './deps.ts';
import { audit } from './members.ts';

/**
 * @simplewebauthn/server, loaded on the first passkey ceremony: importing it costs a process start
 * about 0.14 s (bench/first-hour.ts), and most processes never see a passkey.
 */
const webauthn = () => import('@simplewebauthn/server');

/**
 * Passkeys (WebAuthn, through @simplewebauthn/server): a member registers one once signed in, and
 * signs in with it later. The relying party is the service's own host (BASE_URL); every challenge
 * is stored, used once and valid five minutes.
 */
const CHALLENGE_TTL_MS = 5 * 60 * 1000;

type Deps = Pick<ServiceDeps, 'db' | 'clock' | 'config'>;

function relyingParty(deps: Deps) {
  const url = new URL(deps.config.baseUrl);
  return { id: url.hostname, origin: url.origin };
}

const refused = (why: string) => new ApiError('unauthenticated', `Passkey refused: ${why}`);

async function newChallenge(deps: Deps, challenge: string, memberId: string | null): Promise<string> {
  const id = randomBytes(24).toString('base64url');
  const expiresAt = new Date(deps.clock.now().getTime() + CHALLENGE_TTL_MS).toISOString();
  await insertChallenge(deps.db, { id, challenge, memberId, expiresAt });
  return id;
}

async function usedChallenge(deps: Deps, id: string, memberId: string | null): Promise<string> {
  const stored = await takeChallenge(deps.db, id, deps.clock.now().toISOString());
  if (!stored || stored.memberId !== memberId) throw refused('the request expired; try again.');
  return stored.challenge;
}

export async function passkeyCount(deps: Pick<ServiceDeps, 'db'>, memberId: string): Promise<number> {
  return (await passkeysOf(deps.db, memberId)).length;
}

export async function registrationOptions(deps: Deps, session: DashboardSession) {
  const rp = relyingParty(deps);
  const existing = await passkeysOf(deps.db, session.member.id);
  const options = await (
    await webauthn()
  ).generateRegistrationOptions({
    rpName: 'Matricula dashboard',
    rpID: rp.id,
    userName: session.member.email,
    userID: new TextEncoder().encode(session.member.id),
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.id, transports: p.transports })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  });
  return { options, challengeId: await newChallenge(deps, options.challenge, session.member.id) };
}

export async function registerPasskey(
  deps: Deps,
  session: DashboardSession,
  challengeId: string,
  response: RegistrationResponseJSON,
): Promise<void> {
  const rp = relyingParty(deps);
  const expectedChallenge = await usedChallenge(deps, challengeId, session.member.id);
  const verification = await (
    await webauthn()
  )
    .verifyRegistrationResponse({
      response,
      expectedChallenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: true,
    })
    .catch((error: unknown) => {
      throw refused(error instanceof Error ? error.message : 'invalid registration.');
    });
  if (!verification.verified || !verification.registrationInfo) throw refused('invalid registration.');
  const { credential } = verification.registrationInfo;
  await insertPasskey(deps.db, {
    id: credential.id,
    memberId: session.member.id,
    publicKey: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    transports: (credential.transports ?? response.response.transports ?? []) as AuthenticatorTransportFuture[],
    createdAt: deps.clock.now().toISOString(),
  });
  await audit(deps, {
    orgId: session.member.orgId,
    actor: session.member.id,
    action: 'passkey.register',
    target: credential.id,
  });
}

/** Options for a sign-in with any passkey of this service (discoverable credentials). */
export async function authenticationOptions(deps: Deps) {
  const options = await (
    await webauthn()
  ).generateAuthenticationOptions({ rpID: relyingParty(deps).id, userVerification: 'required' });
  return { options, challengeId: await newChallenge(deps, options.challenge, null) };
}

/** The member whose passkey signed this challenge, or a 401. */
export async function signInWithPasskey(
  deps: Deps,
  challengeId: string,
  response: AuthenticationResponseJSON,
): Promise<Member> {
  const rp = relyingParty(deps);
  const expectedChallenge = await usedChallenge(deps, challengeId, null);
  const passkey = await findPasskey(deps.db, response.id);
  if (!passkey) throw refused('unknown passkey.');
  const verification = await (
    await webauthn()
  )
    .verifyAuthenticationResponse({
      response,
      expectedChallenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: passkey.id,
        publicKey: Buffer.from(passkey.publicKey, 'base64url'),
        counter: passkey.counter,
        transports: passkey.transports,
      },
      requireUserVerification: true,
    })
    .catch((error: unknown) => {
      throw refused(error instanceof Error ? error.message : 'invalid signature.');
    });
  if (!verification.verified) throw refused('invalid signature.');
  const member = await findMember(deps.db, passkey.memberId);
  if (!member) throw refused('unknown passkey.');
  await recordPasskeyUse(
    deps.db,
    passkey.id,
    verification.authenticationInfo.newCounter,
    deps.clock.now().toISOString(),
  );
  await audit(deps, { orgId: member.orgId, actor: member.id, action: 'member.sign_in', target: 'passkey' });
  return member;
}
