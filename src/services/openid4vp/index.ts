import { createPublicKey } from 'node:crypto';
import { CompactSign, compactDecrypt, importJWK } from 'jose';
import {
  createOpenid4vpAuthorizationRequest,
  parseOpenid4vpAuthorizationResponse,
  JarmMode,
  type ParsedOpenid4vpAuthorizationResponse,
} from '@openid4vc/openid4vp';
import { type CallbackContext, type Jwk } from '@openid4vc/oauth2';
import { effectiveStatus } from '../../domain/session-state.ts';
import type { Session } from '../../domain/session.ts';
import { ApiError } from '../../errors.ts';
import { findApplicationById } from '../../store/applications.ts';
import { findSession } from '../../store/sessions.ts';
import type { ServiceDeps } from '../deps.ts';
import { refusal } from '../sessions.ts';
import { answerConsentedSession, decide, rejectAttempt, sameSecret, type SubmissionOutcome } from '../wallet.ts';
import {
  authorizationRequestPayload,
  clientId,
  RESPONSE_ENCRYPTION_ALG,
  RESPONSE_ENCRYPTION_ENC,
  requestUri,
  type RequestFlow,
} from './request.ts';
import { encryptionKeyPair, requestNonce, requestToken, responseCode } from './session-secrets.ts';
import { configuredAcceptedProfiles } from '../credential-profiles.ts';
import type { CredentialProfile } from '../../domain/credential-profiles.ts';

export { openid4vpUri } from './request.ts';
export { certificateChainPem } from './signer.ts';

/**
 * OpenID4VP 1.0 verifier endpoints as use cases: the signed request object a wallet fetches, and
 * the response it posts. Protocol work (JAR, JARM/JWE, DCQL, vp_token shape) is done by the
 * OpenWallet Foundation's @openid4vc libraries; the presentation itself is checked by the same
 * sd-jwt-vc verifier and the same session machinery as Matricula's own wallet protocol.
 */

/** An OAuth-style error (`{error, error_description}`) for the wallet. */
export class Openid4vpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    /** The rejection reason, when a presentation was rejected. */
    readonly reason?: string,
  ) {
    super(description);
    this.name = 'Openid4vpError';
  }
}

const invalidRequest = (description: string, reason?: string) =>
  new Openid4vpError(400, 'invalid_request', description, reason);

/** The session a request/response URI names, if its token is right (compared in constant time) and it is still open. */
async function openSession(deps: ServiceDeps, sessionId: string, token: string): Promise<Session> {
  const session = await findSession(deps.db, sessionId);
  if (!session || !sameSecret(token, requestToken(session.challengeNonce)))
    throw new Openid4vpError(404, 'invalid_request', 'There is no such authorization request.');
  const status = effectiveStatus(session.status, session.expiresAt, deps.clock.now());
  if (status === 'expired') throw invalidRequest('The authorization request has expired.');
  if (status !== 'pending' && status !== 'consented')
    throw invalidRequest(`The authorization request was already answered: the session is ${status}.`);
  return session;
}

/** The request object is signed with the configured key or the sandbox certificate (`x5c` header). */
function signJwtWith(deps: ServiceDeps): CallbackContext['signJwt'] {
  return async (signer, jwt) => {
    const key = (await deps.requestSigner()).privateKey;
    const compact = await new CompactSign(new TextEncoder().encode(JSON.stringify(jwt.payload)))
      .setProtectedHeader(jwt.header)
      .sign(key);
    return { jwt: compact, signerJwk: createPublicKey(key).export({ format: 'jwk' }) as Jwk };
  };
}

const notUsed = () => {
  throw new Error('not used by the verifier');
};

export interface WalletRequestInput extends RequestFlow {
  /** `wallet_nonce` of a POST to the request_uri: echoed in the signed request. */
  walletNonce?: string;
  /** `wallet_metadata` of a POST (JSON): algorithms the wallet can verify the request with. */
  walletMetadata?: string;
}

/** What the wallet's metadata asks that we cannot give, or undefined. */
function unmetWalletMetadata(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let metadata: unknown;
  try {
    metadata = JSON.parse(raw);
  } catch {
    return 'wallet_metadata is not JSON.';
  }
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    return 'wallet_metadata is not a JSON object.';
  const algs = (metadata as Record<string, unknown>).request_object_signing_alg_values_supported;
  if (Array.isArray(algs) && !algs.includes('ES256'))
    return 'This verifier signs requests with ES256, which the wallet_metadata does not list.';
  const formats = (metadata as Record<string, unknown>).vp_formats_supported;
  if (typeof formats === 'object' && formats !== null && !Object.hasOwn(formats, 'dc+sd-jwt'))
    return 'This verifier asks for a dc+sd-jwt credential, which the wallet_metadata does not list.';
  return undefined;
}

/**
 * The signed request object (JAR, `typ: oauth-authz-req+jwt`) of a session, for the
 * `x509_san_dns` client identifier prefix. It expires with the session.
 */
export async function signedRequestObject(
  deps: ServiceDeps,
  sessionId: string,
  token: string,
  input: WalletRequestInput,
): Promise<string> {
  const session = await openSession(deps, sessionId, token);
  if (deps.config.openid4vp.clientIdPrefix !== 'x509_san_dns')
    throw invalidRequest('With the redirect_uri client identifier prefix the request is passed by value, not fetched.');
  const unmet = unmetWalletMetadata(input.walletMetadata);
  if (unmet) throw invalidRequest(unmet);
  const app = await findApplicationById(deps.db, session.appId);
  const signer = await deps.requestSigner();
  const now = deps.clock.now();
  const expiresInSeconds = Math.max(1, Math.floor((Date.parse(session.expiresAt) - now.getTime()) / 1000));
  const created = await createOpenid4vpAuthorizationRequest({
    ...(input.walletNonce ? { wallet: { expectedNonce: input.walletNonce } } : {}),
    authorizationRequestPayload: authorizationRequestPayload(deps.config, session, input, await offeredProfiles(deps), {
      clientName: app?.name,
      walletNonce: input.walletNonce,
    }),
    jar: {
      requestUri: requestUri(deps.config, session, input),
      jwtSigner: { method: 'x5c', x5c: signer.x5c, alg: signer.alg },
      expiresInSeconds,
      // On the service clock (the library would take the system's): the request expires with the session.
      additionalJwtPayload: {
        aud: 'https://self-issued.me/v2',
        iat: Math.floor(now.getTime() / 1000),
        exp: Math.floor(Date.parse(session.expiresAt) / 1000),
      },
    },
    callbacks: { signJwt: signJwtWith(deps), encryptJwe: notUsed },
    now,
  }).catch((err: unknown) => {
    // The library refuses parameters it finds invalid (an over-long wallet_nonce, …): the wallet's fault.
    const response = (err as { errorResponse?: { error?: string; error_description?: string } }).errorResponse;
    if (response?.error) throw new Openid4vpError(400, response.error, response.error_description ?? response.error);
    throw err;
  });
  if (!created.jar) throw new Error('the library returned no request object');
  return created.jar.authorizationRequestJwt;
}

/**
 * The profiles a session's request offers: every accepted one in a signed request (fetched, so the
 * stored profiles are read); the built-in and file ones in a request by value (redirect_uri).
 */
async function offeredProfiles(deps: ServiceDeps): Promise<readonly CredentialProfile[]> {
  return deps.config.openid4vp.clientIdPrefix === 'x509_san_dns'
    ? deps.profiles.accepted()
    : configuredAcceptedProfiles(deps.config);
}

/** Decrypts `direct_post.jwt` responses with the session's key; nothing else decrypts. */
function decryptWith(session: Session): CallbackContext['decryptJwe'] {
  const keys = encryptionKeyPair(session.challengeNonce, session.id);
  return async (jwe) => {
    try {
      const key = await importJWK(keys.privateJwk, RESPONSE_ENCRYPTION_ALG);
      const { plaintext } = await compactDecrypt(jwe, key, {
        keyManagementAlgorithms: [RESPONSE_ENCRYPTION_ALG],
        contentEncryptionAlgorithms: [...RESPONSE_ENCRYPTION_ENC],
      });
      return { decrypted: true, decryptionJwk: keys.publicJwk, payload: new TextDecoder().decode(plaintext) };
    } catch {
      return { decrypted: false };
    }
  };
}

/** A wallet's response, parsed and checked against the request by the library; a sentence when it is not one. */
async function parseResponse(
  deps: ServiceDeps,
  session: Session,
  flow: RequestFlow,
  body: Record<string, unknown>,
): Promise<{ presentation: string; profile: CredentialProfile } | { problem: string }> {
  const profiles = await offeredProfiles(deps);
  let parsed: ParsedOpenid4vpAuthorizationResponse;
  try {
    parsed = await parseOpenid4vpAuthorizationResponse({
      authorizationResponse: body,
      authorizationRequestPayload: authorizationRequestPayload(deps.config, session, flow, profiles),
      // Responses are encrypted, never signed: a signed-only one is refused below.
      callbacks: { decryptJwe: decryptWith(session), verifyJwt: () => ({ verified: false }) },
    });
  } catch (err) {
    const description = (err as { errorResponse?: { error_description?: string } }).errorResponse?.error_description;
    return { problem: `the authorization response is not valid: ${description ?? (err as Error).message}` };
  }
  if (deps.config.openid4vp.responseMode === 'direct_post.jwt' && parsed.jarm?.type !== JarmMode.Encrypted)
    return { problem: 'the authorization response is not encrypted to the key of the request (direct_post.jwt)' };
  if (parsed.type !== 'dcql') return { problem: 'the vp_token does not answer the DCQL query' };
  // Any one credential query of the set answers; the answer is checked against its profile only.
  const ids = Object.keys(parsed.dcql.presentations);
  const profile = ids.length === 1 ? profiles.find((p) => p.id === ids[0]) : undefined;
  const presentations = profile ? parsed.dcql.presentations[profile.id] : undefined;
  if (!profile || !presentations)
    return {
      problem: `the vp_token must hold exactly one credential, of ${profiles.map((p) => `"${p.id}"`).join(' or ')}`,
    };
  if (presentations.length !== 1 || typeof presentations[0] !== 'string')
    return { problem: 'the vp_token must hold one dc+sd-jwt presentation (a compact SD-JWT with key binding)' };
  return { presentation: presentations[0], profile };
}

export interface ResponseAcknowledgement {
  /** Same-device flows: where the wallet sends the student back (the portal, with a response_code). */
  redirect_uri?: string;
}

function acknowledgement(deps: ServiceDeps, session: Session, flow: RequestFlow): ResponseAcknowledgement {
  if (!flow.sameDevice) return {};
  return {
    redirect_uri: `${deps.config.portalUrl}/verify/${encodeURIComponent(session.id)}?response_code=${responseCode(session.challengeNonce)}`,
  };
}

/** The wallet answered: it consents to share, so a pending session is consented first (`consent.approved`). */
async function consented(deps: ServiceDeps, session: Session): Promise<Session> {
  if (session.status === 'consented') return session;
  if (!(await decide(deps, session, 'approved'))) throw await refusal(deps, session.id, 'answer');
  return { ...session, status: 'consented' };
}

/**
 * A wallet's authorization response (`direct_post` or `direct_post.jwt`). `access_denied` declines
 * the session. Anything else is the student's answer: checked exactly as a `sd-jwt-vc`
 * presentation to Matricula's own endpoint, with the KB-JWT bound to this request's client
 * identifier (`aud`) and nonce. A rejected response is a failed attempt with its reason.
 */
export async function receiveAuthorizationResponse(
  deps: ServiceDeps,
  sessionId: string,
  token: string,
  flow: RequestFlow,
  body: Record<string, unknown>,
): Promise<ResponseAcknowledgement & { outcome?: SubmissionOutcome }> {
  const session = await openSession(deps, sessionId, token);
  try {
    if (typeof body.error === 'string' && body.vp_token === undefined && body.response === undefined) {
      if (body.error === 'access_denied') {
        if (!(await decide(deps, session, 'declined'))) throw await refusal(deps, session.id, 'decline');
        return acknowledgement(deps, session, flow);
      }
      const description = typeof body.error_description === 'string' ? `: ${body.error_description.slice(0, 200)}` : '';
      await rejectAttempt(deps, await consented(deps, session), 'openid4vp', {
        reason: 'malformed_presentation',
        message: `the wallet answered with the error ${body.error.slice(0, 64)}${description}`,
      });
    }
    const open = await consented(deps, session);
    const parsed = await parseResponse(deps, open, flow, body);
    if ('problem' in parsed)
      return await rejectAttempt(deps, open, 'openid4vp', {
        reason: 'malformed_presentation',
        message: parsed.problem,
      });
    const outcome = await answerConsentedSession(deps, open, {
      protocol: 'openid4vp',
      format: 'sd-jwt-vc',
      presentation: parsed.presentation,
      nonce: requestNonce(session.challengeNonce),
      audience: clientId(deps.config, session, flow),
      profiles: [parsed.profile],
    });
    return { ...acknowledgement(deps, session, flow), outcome };
  } catch (err) {
    if (err instanceof ApiError)
      throw err.code === 'presentation_rejected'
        ? invalidRequest(err.message, err.reason)
        : invalidRequest(err.code === 'session_expired' ? 'The authorization request has expired.' : err.message);
    throw err;
  }
}
