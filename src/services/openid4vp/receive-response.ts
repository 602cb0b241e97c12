import { compactDecrypt, importJWK } from 'jose';
import {
  JarmMode,
  parseOpenid4VpAuthorizationResponsePayload,
  validateOpenid4vpAuthorizationResponsePayload,
  verifyJarmAuthorizationResponse,
  type Openid4vpAuthorizationRequest,
  type Openid4vpAuthorizationRequestDcApi,
} from '@openid4vc/openid4vp';
import type { CallbackContext } from '@openid4vc/oauth2';
import { CREDENTIAL_FORMAT_OF_PROFILE, type CredentialProfile } from '../../domain/credential-profiles.ts';
import type { Session } from '../../domain/session.ts';
import type { ServiceDeps } from '../deps.ts';
import { sessionRefused } from '../sessions.ts';
import { completeWithResult, decide, judgeAnswer, rejectAttempt, type SubmissionOutcome } from '../wallet.ts';
import { oauthErrorOf } from './answer-errors.ts';
import { invalidRequest, openSession } from './open-request.ts';
import {
  authorizationRequestPayload,
  clientId,
  offeredProfiles,
  RESPONSE_ENCRYPTION_ALG,
  RESPONSE_ENCRYPTION_ENC,
  type RequestFlow,
} from './request.ts';
import { holdForRedirect, portalReturn } from './same-device.ts';
import { encryptionKeyPair, requestNonce } from './session-secrets.ts';
import { deleteHeldResult } from '../../store/openid4vp-held-results.ts';

/**
 * The wallet's authorization response at the response_uri (OpenID4VP 1.0 §8), in protocol
 * steps: open it (decrypt `direct_post.jwt`), then either an error response (§8.5: processed,
 * 200; `access_denied` declines) or a presentation, judged by the session machinery.
 */

/** Error codes of OpenID4VP 1.0 §8.5 and OAuth 2.0 a wallet may answer; anything else counts as `other`. */
const WALLET_ERRORS = new Set([
  'invalid_request',
  'unauthorized_client',
  'access_denied',
  'unsupported_response_type',
  'invalid_scope',
  'server_error',
  'temporarily_unavailable',
  'invalid_client',
  'vp_formats_not_supported',
  'invalid_request_uri_method',
  'invalid_transaction_data',
  'wallet_unavailable',
  'invalid_request_object',
  'invalid_request_uri',
  'request_not_supported',
  'request_uri_not_supported',
]);

/** The error code as metrics and logs may show it: a known code, or `other` (a wallet's free text is not logged). */
export function walletErrorLabel(error: string): string {
  return WALLET_ERRORS.has(error) ? error : 'other';
}

/** Decrypts `direct_post.jwt` responses with the session's key; nothing else decrypts. */
export function decryptWith(session: Session): CallbackContext['decryptJwe'] {
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

const libraryMessage = (err: unknown) =>
  (err as { errorResponse?: { error_description?: string } }).errorResponse?.error_description ??
  (err as Error).message;

type Opened = { params: Record<string, unknown>; encrypted: boolean } | { problem: string };

/** The response's parameters: the form itself, or the plaintext of its `response` JWE (the library's JARM check). */
async function openResponse(
  session: Session,
  request: Openid4vpAuthorizationRequest,
  body: Record<string, unknown>,
): Promise<Opened> {
  if (body.response === undefined) return { params: body, encrypted: false };
  if (typeof body.response !== 'string') return { problem: 'the response parameter is not a JWE' };
  try {
    const verified = await verifyJarmAuthorizationResponse({
      jarmAuthorizationResponseJwt: body.response,
      authorizationRequestPayload: request,
      expectedClientId: request.client_id!,
      // Responses are encrypted, never signed: a signed one is refused below.
      callbacks: { decryptJwe: decryptWith(session), verifyJwt: async () => ({ verified: false }) },
    });
    if (verified.type !== JarmMode.Encrypted)
      return { problem: 'the authorization response must be encrypted, and only encrypted (direct_post.jwt)' };
    return { params: verified.jarmAuthorizationResponse as Record<string, unknown>, encrypted: true };
  } catch (err) {
    return { problem: `the authorization response is not valid: ${libraryMessage(err)}` };
  }
}

/**
 * The one dc+sd-jwt presentation of a response's vp_token, checked against the request by the
 * library, and the profile of the credential query it answers (any one of the set answers).
 */
function presentationOf(
  deps: ServiceDeps,
  request: Openid4vpAuthorizationRequest,
  profiles: readonly CredentialProfile[],
  opened: { params: Record<string, unknown>; encrypted: boolean },
): { presentation: string; profile: CredentialProfile } | { problem: string } {
  const encryptedMode = deps.config.openid4vp.responseMode === 'direct_post.jwt';
  if (encryptedMode && !opened.encrypted)
    return { problem: 'the authorization response is not encrypted to the key of the request (direct_post.jwt)' };
  if (!encryptedMode && opened.encrypted)
    return { problem: 'the authorization response is encrypted, but the request asked for direct_post' };
  return presentationInPayload(request, profiles, opened.params);
}

/**
 * The one presentation of an authorization response's vp_token (its parameters, opened), checked
 * against the request by the library, and the profile of the credential query it answers: the
 * same for the response_uri and the Digital Credentials API (dc-api-response.ts).
 */
export function presentationInPayload(
  request: Openid4vpAuthorizationRequest | Openid4vpAuthorizationRequestDcApi,
  profiles: readonly CredentialProfile[],
  params: Record<string, unknown>,
): { presentation: string; profile: CredentialProfile } | { problem: string } {
  let validated: ReturnType<typeof validateOpenid4vpAuthorizationResponsePayload>;
  try {
    validated = validateOpenid4vpAuthorizationResponsePayload({
      authorizationRequestPayload: request,
      authorizationResponsePayload: parseOpenid4VpAuthorizationResponsePayload(params),
    });
  } catch (err) {
    return { problem: `the authorization response is not valid: ${libraryMessage(err)}` };
  }
  if (validated.type !== 'dcql') return { problem: 'the vp_token does not answer the DCQL query' };
  // The answer is checked against the profile of the query it answers, and only that one.
  const ids = Object.keys(validated.dcql.presentations);
  const profile = ids.length === 1 ? profiles.find((p) => p.id === ids[0]) : undefined;
  const presentations = profile ? validated.dcql.presentations[profile.id] : undefined;
  if (!profile || !presentations)
    return {
      problem: `the vp_token must hold exactly one credential, of ${profiles.map((p) => `"${p.id}"`).join(' or ')}`,
    };
  if (presentations.length !== 1 || typeof presentations[0] !== 'string')
    return { problem: 'the vp_token must hold one dc+sd-jwt presentation (a compact SD-JWT with key binding)' };
  return { presentation: presentations[0], profile };
}

export interface ResponseAcknowledgement {
  /** Same-device flows: where the wallet sends the student back (the portal, with a response_code after an answer). */
  redirect_uri?: string;
  /** The wallet answered with this error (a known code or `other`): recorded, nothing else. */
  walletError?: string;
  outcome?: SubmissionOutcome;
}

/**
 * An error response (§8.5): processed, never a failed presentation, and never a consent.
 * `access_denied` is the student's refusal: the session is declined. Any other error leaves the
 * session open for another try; it is counted (`matricula_openid4vp_wallet_errors_total`).
 */
async function walletError(
  deps: ServiceDeps,
  session: Session,
  flow: RequestFlow,
  request: Openid4vpAuthorizationRequest,
  params: Record<string, unknown>,
): Promise<ResponseAcknowledgement> {
  // `state` is returned when the request had one; a different one is not an answer to this request.
  if (params.state !== undefined && params.state !== request.state)
    throw invalidRequest('The state of the error response is not the state of the request.');
  const error = walletErrorLabel(String(params.error));
  if (error === 'access_denied' && !(await decide(deps, session, 'declined')))
    throw oauthErrorOf(await sessionRefused(deps, session.id, 'decline'));
  deps.metrics.openid4vpWalletError({ error });
  return { ...portalReturn(deps, session, flow), walletError: error };
}

export const isErrorResponse = (params: Record<string, unknown>) =>
  typeof params.error === 'string' && params.vp_token === undefined;

/**
 * A wallet's authorization response (`direct_post` or `direct_post.jwt`). A presentation is the
 * student's answer: the session is consented (`consent.approved`), then the presentation is checked
 * exactly as a `sd-jwt-vc` presentation to Matricula's own endpoint, with the KB-JWT bound to this
 * request's client identifier (`aud`) and nonce. A rejected one is a failed attempt with its reason.
 * Cross-device, a judged answer completes the session; same-device, it waits for the redirect.
 */
export async function receiveAuthorizationResponse(
  deps: ServiceDeps,
  sessionId: string,
  token: string,
  flow: RequestFlow,
  body: Record<string, unknown>,
): Promise<ResponseAcknowledgement> {
  const session = await openSession(deps, sessionId, token);
  const profiles = await offeredProfiles(deps);
  const request = authorizationRequestPayload(deps.config, session, flow, profiles);
  const opened = await openResponse(session, request, body);
  if ('params' in opened && isErrorResponse(opened.params))
    return walletError(deps, session, flow, request, opened.params);
  const open = await consented(deps, session);
  const found = 'problem' in opened ? opened : presentationOf(deps, request, profiles, opened);
  if ('problem' in found)
    throw oauthErrorOf(
      await rejectAttempt(deps, open, 'openid4vp', { reason: 'malformed_presentation', message: found.problem }),
    );
  const judgement = await judgeAnswer(deps, open, {
    protocol: 'openid4vp',
    format: CREDENTIAL_FORMAT_OF_PROFILE[found.profile.format],
    presentation: found.presentation,
    nonce: requestNonce(session.challengeNonce),
    audience: clientId(deps.config, session, flow),
    profiles: [found.profile],
  });
  if (judgement.kind !== 'accepted') throw oauthErrorOf(judgement);
  if (flow.sameDevice) return holdForRedirect(deps, open, judgement.result);
  // An earlier same-device answer may wait for its redirect: this one completes the session instead.
  const completed = await completeWithResult(deps, open, judgement.result, (db) => deleteHeldResult(db, session.id));
  if (completed.kind === 'refused') throw oauthErrorOf(completed);
  return { outcome: completed.outcome };
}

/** The wallet answered: it consents to share, so a pending session is consented first (`consent.approved`). */
export async function consented(deps: ServiceDeps, session: Session): Promise<Session> {
  if (session.status === 'consented') return session;
  if (!(await decide(deps, session, 'approved'))) throw oauthErrorOf(await sessionRefused(deps, session.id, 'answer'));
  return { ...session, status: 'consented' };
}
