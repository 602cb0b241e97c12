import type { Openid4vpAuthorizationRequest } from '@openid4vc/openid4vp';
import type { Config } from '../../config.ts';
import { BoundedCache } from '../../domain/bounded-cache.ts';
import type { CredentialProfile } from '../../domain/credential-profiles.ts';
import type { Session } from '../../domain/session.ts';
import { ALLOWED_ALGORITHMS } from '../../proofs/sd-jwt-vc/index.ts';
import { configuredAcceptedProfiles } from '../credential-profiles.ts';
import { dcqlQuery } from './dcql.ts';
import { encryptionKeyPair, requestNonce, requestState, requestToken } from './session-secrets.ts';
import { loadedRequestSigner } from './signer.ts';
import type { ServiceDeps } from '../deps.ts';

/**
 * The OpenID4VP 1.0 authorization request of a session, a pure function of the session and the
 * configuration: every API process builds the same one, nothing is stored.
 */

/** Encryption algorithms of `direct_post.jwt` responses: ECDH-ES on P-256 with these content encryptions. */
export const RESPONSE_ENCRYPTION_ALG = 'ECDH-ES';
export const RESPONSE_ENCRYPTION_ENC = ['A128GCM', 'A256GCM'] as const;

/** Same-device requests come back to the portal; `device=same` in the URIs says which flow this is. */
export interface RequestFlow {
  sameDevice: boolean;
}

function sessionPath(config: Config, session: Pick<Session, 'id'>): string {
  return `${config.baseUrl}/openid4vp/v1/sessions/${encodeURIComponent(session.id)}`;
}

function withFlow(url: string, session: Pick<Session, 'challengeNonce'>, flow: RequestFlow): string {
  return `${url}?token=${requestToken(session.challengeNonce)}${flow.sameDevice ? '&device=same' : ''}`;
}

export function requestUri(config: Config, session: Pick<Session, 'id' | 'challengeNonce'>, flow: RequestFlow) {
  return withFlow(`${sessionPath(config, session)}/request`, session, flow);
}

export function responseUri(config: Config, session: Pick<Session, 'id' | 'challengeNonce'>, flow: RequestFlow) {
  return withFlow(`${sessionPath(config, session)}/response`, session, flow);
}

/** Whether requests are signed (JAR by reference) under an X.509 client identifier prefix. */
export const signsRequests = (config: Config) => config.openid4vp.clientIdPrefix !== 'redirect_uri';

/** `x509_hash:<SHA-256 of the request certificate>`: the request signer must be loaded (app start does it). */
function x509HashClientId(config: Config): string {
  const signer = loadedRequestSigner(config);
  if (!signer) throw new Error('the OpenID4VP request signer is not loaded: await deps.requestSigner() first');
  return `x509_hash:${signer.x509Hash}`;
}

/**
 * The client identifier: `x509_hash:<certificate hash>` (HAIP), `x509_san_dns:<BASE_URL host>`, or
 * `redirect_uri:<response_uri>` in development.
 */
export function clientId(config: Config, session: Pick<Session, 'id' | 'challengeNonce'>, flow: RequestFlow): string {
  const prefix = config.openid4vp.clientIdPrefix;
  if (prefix === 'x509_hash') return x509HashClientId(config);
  if (prefix === 'x509_san_dns') return `x509_san_dns:${new URL(config.baseUrl).hostname}`;
  return `redirect_uri:${responseUri(config, session, flow)}`;
}

/**
 * Whether `audience` is a client identifier this service uses for its sessions' OpenID4VP
 * requests (either prefix): a key-binding JWT addressed to it answers a session, whose nonce
 * is derived from the session's challenge, so direct verify refuses it like a session nonce.
 */
export function isOwnClientId(config: Config, audience: string): boolean {
  const signer = loadedRequestSigner(config);
  return (
    audience === `x509_san_dns:${new URL(config.baseUrl).hostname}` ||
    (signer !== undefined && audience === `x509_hash:${signer.x509Hash}`) ||
    audience.startsWith(`redirect_uri:${config.baseUrl}/openid4vp/v1/sessions/`) ||
    // The audience of answers through the Digital Credentials API (dc-api-request.ts).
    audience === `origin:${new URL(config.portalUrl).origin}`
  );
}

/** The authorization request parameters (the JAR payload, or the URI's parameters with `redirect_uri`). */
export function authorizationRequestPayload(
  config: Config,
  session: Session,
  flow: RequestFlow,
  /** The accepted credential profiles the DCQL query offers (docs/credential-profiles.md). */
  profiles: readonly CredentialProfile[],
  extra: { clientName?: string; walletNonce?: string; trustedAuthorities?: readonly string[] } = {},
): Openid4vpAuthorizationRequest {
  const encrypted = config.openid4vp.responseMode === 'direct_post.jwt';
  const algValues = [...ALLOWED_ALGORITHMS] as [string, ...string[]];
  return {
    response_type: 'vp_token',
    client_id: clientId(config, session, flow),
    response_uri: responseUri(config, session, flow),
    response_mode: config.openid4vp.responseMode,
    nonce: requestNonce(session.challengeNonce),
    state: requestState(session.challengeNonce),
    dcql_query: dcqlQuery(profiles, session.requiredClaims, extra.trustedAuthorities),
    client_metadata: {
      ...(extra.clientName ? { client_name: extra.clientName } : {}),
      vp_formats_supported: { 'dc+sd-jwt': { 'sd-jwt_alg_values': algValues, 'kb-jwt_alg_values': algValues } },
      ...(encrypted
        ? {
            jwks: { keys: [encryptionKeyPair(session.challengeNonce, session.id).publicJwk] },
            encrypted_response_enc_values_supported: [...RESPONSE_ENCRYPTION_ENC],
          }
        : {}),
      ...(signsRequests(config) ? itWalletMetadata(config, session, flow) : {}),
    },
    ...(extra.walletNonce ? { wallet_nonce: extra.walletNonce } : {}),
  };
}

/**
 * Registration parameters the Italian IT-Wallet profile requires in a signed request's
 * client_metadata (its SDK refuses the request without them); other wallets ignore them.
 */
function itWalletMetadata(config: Config, session: Pick<Session, 'id' | 'challengeNonce'>, flow: RequestFlow) {
  return {
    application_type: 'web',
    // A URL in that profile (its federation entity id); for an x509 verifier, the service's own.
    client_id: config.baseUrl,
    logo_uri: `${config.portalUrl}/assets/favicon.svg`,
    request_uris: [requestUri(config, session, flow)],
    response_uris: [responseUri(config, session, flow)],
  };
}

function queryString(params: Record<string, unknown>): string {
  return new URLSearchParams(
    Object.entries(params).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)]),
  ).toString();
}

/**
 * `openid4vpUri`: with `x509_hash` or `x509_san_dns`, the client id and a `request_uri` the wallet fetches the
 * signed request from (by GET, or by POST with its metadata); with `redirect_uri`, the whole
 * unsigned request by value.
 */
export function openid4vpUri(config: Config, session: Session, flow: RequestFlow = { sameDevice: false }): string {
  // Every read of a session shows its URI, and a business polls the same session until it
  // completes: the string is kept per configuration, bounded, least recently used out first. It depends on
  // nothing of the session that changes (its id, challenge and required claims).
  let kept = uris.get(config);
  if (!kept) uris.set(config, (kept = new BoundedCache<string, string>(KEPT_URIS)));
  const key = `${flow.sameDevice ? 's' : 'c'}:${session.id}:${session.challengeNonce}`;
  const found = kept.get(key);
  if (found !== undefined) return found;
  const uri = buildOpenid4vpUri(config, session, flow);
  kept.set(key, uri);
  return uri;
}

const KEPT_URIS = 10_000;
const uris = new WeakMap<Config, BoundedCache<string, string>>();

/** {@link openid4vpUri} made afresh, for a caller that keeps it itself (a session's links, services/sessions.ts). */
export function buildOpenid4vpUri(config: Config, session: Session, flow: RequestFlow = { sameDevice: false }): string {
  if (signsRequests(config)) return signedRequestUri(config, session, flow);
  // By value, without the database: the built-in and file profiles (docs/credential-profiles.md).
  const params = authorizationRequestPayload(config, session, flow, configuredAcceptedProfiles(config));
  return `${config.openid4vp.scheme}://?${queryString(params)}`;
}

/**
 * The URI of a signed request: `client_id`, `request_uri` and `request_uri_method=post`,
 * form-encoded. All of it but the session's id and request token is the same for every session of
 * a configuration, and is encoded once; the id and the token are made of characters the encoding
 * leaves as they are, so they are written as they are. Encoding the whole string instead (the
 * fallback, for an id of other characters) takes about 60 instructions a character.
 */
function signedRequestUri(config: Config, session: Session, flow: RequestFlow): string {
  // The client id is read each time: a configuration's signer may be loaded again (another key).
  const client = clientId(config, session, flow);
  const token = requestToken(session.challengeNonce);
  if (!FORM_UNCHANGED.test(session.id) || !FORM_UNCHANGED.test(token)) {
    const params = { client_id: client, request_uri: requestUri(config, session, flow), request_uri_method: 'post' };
    return `${config.openid4vp.scheme}://?${queryString(params)}`;
  }
  let kept = signedUriPrefixes.get(config);
  if (kept?.clientId !== client) {
    const sessions = `${config.baseUrl}/openid4vp/v1/sessions/`;
    kept = {
      clientId: client,
      prefix: `${config.openid4vp.scheme}://?${queryString({ client_id: client, request_uri: sessions })}`,
    };
    signedUriPrefixes.set(config, kept);
  }
  return `${kept.prefix}${session.id}${ENCODED_TOKEN_QUERY}${token}${flow.sameDevice ? ENCODED_SAME_DEVICE : ''}&request_uri_method=post`;
}

/** What application/x-www-form-urlencoded (URLSearchParams) leaves unchanged: letters, digits and `*-._`. */
const FORM_UNCHANGED = /^[\w*.-]*$/;
const formEncoded = (text: string) => new URLSearchParams({ v: text }).toString().slice('v='.length);
/** The parts of `request_uri` after the session's id and after its token, form-encoded. */
const ENCODED_TOKEN_QUERY = formEncoded('/request?token=');
const ENCODED_SAME_DEVICE = formEncoded('&device=same');
/** Per configuration: the signed request URI up to the session's id in `request_uri`. */
const signedUriPrefixes = new WeakMap<Config, { clientId: string; prefix: string }>();

/**
 * The profiles a session's request offers: every accepted one in a signed request (fetched, so the
 * stored profiles are read); the built-in and file ones in a request by value (redirect_uri).
 */
export async function offeredProfiles(
  deps: Pick<ServiceDeps, 'config' | 'profiles'>,
): Promise<readonly CredentialProfile[]> {
  return signsRequests(deps.config) ? deps.profiles.accepted() : configuredAcceptedProfiles(deps.config);
}
