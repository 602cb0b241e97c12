import {
  getOpenid4vpClientId,
  JarmMode,
  verifyJarmAuthorizationResponse,
  type Openid4vpAuthorizationRequestDcApi,
} from '@openid4vc/openid4vp';
import { CREDENTIAL_FORMAT_OF_PROFILE } from '../../domain/credential-profiles.ts';
import type { Session } from '../../domain/session.ts';
import { deleteHeldResult } from '../../store/openid4vp-held-results.ts';
import type { ServiceDeps } from '../deps.ts';
import { sessionRefused } from '../sessions.ts';
import { completeWithResult, decide, judgeAnswer, rejectAttempt, type SubmissionOutcome } from '../wallet.ts';
import { dcApiAudience, dcApiRequestPayload, portalOrigin, type DcApiProtocol } from './dc-api-request.ts';
import { openSession } from './open-request.ts';
import { oauthErrorOf } from './answer-errors.ts';
import {
  consented,
  decryptWith,
  isErrorResponse,
  presentationInPayload,
  walletErrorLabel,
} from './receive-response.ts';
import { offeredProfiles } from './request.ts';
import { requestNonce } from './session-secrets.ts';

/**
 * The wallet's answer through the Digital Credentials API, as the portal page posts it: the
 * `DigitalCredential`'s `protocol` and `data`. The same steps as at the response_uri
 * (receive-response.ts): open it (decrypt `dc_api.jwt`), then an error response (§8.5;
 * `access_denied` declines) or a presentation judged by the session machinery, its key-binding
 * JWT bound to the request's nonce and to `origin:<the portal's origin>`. An answer made for
 * another origin or another request is therefore a failed attempt with its reason.
 */

/** A `DigitalCredential` as the browser returned it (or an error response the page reports). */
export interface DcApiAnswer {
  protocol: DcApiProtocol;
  data: Record<string, unknown>;
}

type Opened = { params: Record<string, unknown> } | { problem: string };

const libraryMessage = (err: unknown) =>
  (err as { errorResponse?: { error_description?: string } }).errorResponse?.error_description ??
  (err as Error).message;

/**
 * The answer's parameters: the plaintext of its `response` JWE (the library's JARM check, with
 * the client identifier the DC API gives the request), or a plain error response. A presentation
 * must come encrypted: the request asked for `dc_api.jwt`.
 */
async function openAnswer(
  deps: ServiceDeps,
  session: Session,
  request: Openid4vpAuthorizationRequestDcApi,
  data: Record<string, unknown>,
): Promise<Opened> {
  if (data.response === undefined) {
    if (data.vp_token !== undefined)
      return { problem: 'the authorization response is not encrypted to the key of the request (dc_api.jwt)' };
    return { params: data };
  }
  if (typeof data.response !== 'string') return { problem: 'the response parameter is not a JWE' };
  try {
    const expected = getOpenid4vpClientId({
      clientId: request.client_id,
      responseMode: request.response_mode,
      origin: portalOrigin(deps.config),
    });
    const verified = await verifyJarmAuthorizationResponse({
      jarmAuthorizationResponseJwt: data.response,
      authorizationRequestPayload: request,
      expectedClientId: expected.effectiveClientId,
      // Responses are encrypted, never signed: a signed one is refused below.
      callbacks: { decryptJwe: decryptWith(session), verifyJwt: async () => ({ verified: false }) },
    });
    if (verified.type !== JarmMode.Encrypted)
      return { problem: 'the authorization response must be encrypted, and only encrypted (dc_api.jwt)' };
    return { params: verified.jarmAuthorizationResponse as Record<string, unknown> };
  } catch (err) {
    return { problem: `the authorization response is not valid: ${libraryMessage(err)}` };
  }
}

/** What became of the answer: the session completed, or the wallet's error was recorded. */
export interface DcApiReceipt {
  outcome?: SubmissionOutcome;
  /** The wallet (or the browser, for the student) answered with this error: a known code or `other`. */
  walletError?: string;
}

/** An error response: never a presentation nor a consent; `access_denied` declines the session. */
async function walletError(
  deps: ServiceDeps,
  session: Session,
  params: Record<string, unknown>,
): Promise<DcApiReceipt> {
  const error = walletErrorLabel(String(params.error));
  if (error === 'access_denied' && !(await decide(deps, session, 'declined')))
    throw oauthErrorOf(await sessionRefused(deps, session.id, 'decline'));
  deps.metrics.openid4vpWalletError({ error });
  return { walletError: error };
}

/**
 * The answer to a session's DC API request. A presentation consents the session
 * (`consent.approved`) and is judged exactly as one at the response_uri; a valid one completes the
 * session at once (the browser that asked carried it back, so there is no redirect to wait for),
 * a rejected one is a failed attempt with its reason.
 */
export async function receiveDcApiResponse(
  deps: ServiceDeps,
  sessionId: string,
  token: string,
  answer: DcApiAnswer,
): Promise<DcApiReceipt> {
  const session = await openSession(deps, sessionId, token);
  const profiles = await offeredProfiles(deps);
  const request = dcApiRequestPayload(deps.config, session, profiles, answer.protocol);
  const opened = await openAnswer(deps, session, request, answer.data);
  if ('params' in opened && isErrorResponse(opened.params)) return walletError(deps, session, opened.params);
  const open = await consented(deps, session);
  const found = 'problem' in opened ? opened : presentationInPayload(request, profiles, opened.params);
  if ('problem' in found)
    throw oauthErrorOf(
      await rejectAttempt(deps, open, 'openid4vp', { reason: 'malformed_presentation', message: found.problem }),
    );
  const judgement = await judgeAnswer(deps, open, {
    protocol: 'openid4vp',
    format: CREDENTIAL_FORMAT_OF_PROFILE[found.profile.format],
    presentation: found.presentation,
    nonce: requestNonce(session.challengeNonce),
    audience: dcApiAudience(deps.config),
    profiles: [found.profile],
  });
  if (judgement.kind !== 'accepted') throw oauthErrorOf(judgement);
  // An earlier same-device answer may wait for its redirect: this one completes the session instead.
  const completed = await completeWithResult(deps, open, judgement.result, (db) => deleteHeldResult(db, session.id));
  if (completed.kind === 'refused') throw oauthErrorOf(completed);
  return { outcome: completed.outcome };
}
