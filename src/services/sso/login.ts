import { createHash, randomBytes } from 'node:crypto';
import { isId } from '../../domain/ids.ts';
import { effectiveStatus } from '../../domain/session-state.ts';
import type { Session } from '../../domain/session.ts';
import { ApiError, forbidden, notFound } from '../../errors.ts';
import {
  findIdentityProvider,
  findIdentityProviderByEntity,
  type StoredIdentityProvider,
} from '../../store/identity-providers.ts';
import { findSession } from '../../store/sessions.ts';
import { replaceSsoRequest } from '../../store/sso-requests.ts';
import { acceptedMethods } from '../answer-methods.ts';
import type { ServiceDeps } from '../deps.ts';
import { sameSecret } from '../wallet.ts';
import { authorizationUrl } from './oidc/authorization-request.ts';
import { clientSecretOf } from './oidc/discovery.ts';
import { samlFor } from './saml/service-provider.ts';

/**
 * Starting a university login for a session (`GET /sso/v1/sessions/{id}/start`): the session's
 * nonce authorizes it, the session must accept the channel, and the login request is bound to the
 * session and to this browser (a cookie whose hash the request row keeps): the answer is accepted
 * only back in the browser that asked, for the one request outstanding there.
 */

/** The cookie that binds a login to the browser that started it. */
export const BROWSER_COOKIE = 'matricula_sso';
const BROWSER_SECRET = /^[A-Za-z0-9_-]{43}$/;

export function browserHash(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** The session a browser may log in for: right nonce (constant time), open, accepting university login. */
async function sessionForLogin(deps: ServiceDeps, sessionId: string, nonce: string): Promise<Session> {
  const session = await findSession(deps.db, sessionId);
  if (!session || !sameSecret(nonce, session.challengeNonce)) throw notFound('session');
  const status = effectiveStatus(session.status, session.expiresAt, deps.clock.now());
  if (status === 'expired') throw new ApiError('session_expired', 'The session has expired.');
  if (status !== 'pending' && status !== 'consented')
    throw new ApiError('invalid_state', `Cannot sign in for a ${status} session.`);
  if (!(await acceptedMethods(deps, session)).includes('university_login'))
    throw forbidden('This session does not accept university login (allowedMethods).');
  return session;
}

/** An IdP of the session's environment, by registry id or by entity id / issuer. */
export async function providerFor(
  deps: Pick<ServiceDeps, 'db'>,
  session: Pick<Session, 'environment'>,
  idp: string,
): Promise<StoredIdentityProvider | undefined> {
  const found = idp.startsWith('idp_')
    ? await findIdentityProvider(deps.db, idp)
    : await findIdentityProviderByEntity(deps.db, session.environment, idp);
  return found && found.environment === session.environment ? found : undefined;
}

export interface LoginStart {
  /** Where to send the browser: the IdP's login, with the signed request. */
  location: string;
  /** The binding cookie's value (the one the browser had, or a new one) and how long to keep it. */
  browserSecret: string;
  maxAgeSeconds: number;
}

export async function startLogin(
  deps: ServiceDeps,
  input: { sessionId: string; nonce: string; idp: string; browserSecret?: string },
): Promise<LoginStart> {
  const session = await sessionForLogin(deps, input.sessionId, input.nonce);
  const idp = await providerFor(deps, session, input.idp);
  if (!idp) throw notFound('identity provider', 'idp');
  const browserSecret =
    input.browserSecret && BROWSER_SECRET.test(input.browserSecret)
      ? input.browserSecret
      : randomBytes(32).toString('base64url');
  // An NCName (SAML IDs are xs:ID): a letter first.
  const requestId = `_${randomBytes(20).toString('hex')}`;
  const now = deps.clock.now();
  await replaceSsoRequest(deps.db, {
    requestId,
    sessionId: session.id,
    browserHash: browserHash(browserSecret),
    idpId: idp.id,
    createdAt: now.toISOString(),
    expiresAt: session.expiresAt,
  });
  const maxAgeSeconds = Math.max(1, Math.ceil((Date.parse(session.expiresAt) - now.getTime()) / 1000));
  if (idp.protocol === 'oidc') {
    const location = await oidcLocation(deps, idp, {
      requestId,
      challengeNonce: session.challengeNonce,
      browserSecret,
    });
    return { location, browserSecret, maxAgeSeconds };
  }
  const keys = await deps.samlKeys();
  const saml = samlFor({ baseUrl: deps.config.baseUrl, keys, idp, clock: deps.clock, requestId });
  // RelayState names the session, for the IdPs that show it; nothing relies on it.
  const location = await saml.getAuthorizeUrlAsync(session.id, undefined, {});
  return { location, browserSecret, maxAgeSeconds };
}

/**
 * The identity providers a session's student may pick (the portal's type-ahead): of the session's
 * environment, matching `query`. Knowing the session id is the authorization, as for its page.
 */
export async function providersForSession(
  deps: ServiceDeps,
  sessionId: string,
  query: string,
  limit: number,
): Promise<Array<{ id: string; name: string; domain: string; country: string }>> {
  const session = isId('session', sessionId) ? await findSession(deps.db, sessionId) : undefined;
  if (!session) throw notFound('session');
  return deps.providerDirectory.search(session.environment, query, limit);
}

/**
 * Where an OpenID Connect login starts: the provider's authorization endpoint (from its discovery
 * document, fetched through the outbound guard), with PKCE, state and the session's nonce
 * (oidc/authorization-request.ts). A provider that cannot be reached answers 503.
 */
async function oidcLocation(
  deps: ServiceDeps,
  idp: StoredIdentityProvider,
  input: { requestId: string; challengeNonce: string; browserSecret: string },
): Promise<string> {
  let secret: string | undefined;
  try {
    secret = clientSecretOf(idp.clientSecretSealed, idp.id, deps.config.universityLogin.secretsKey);
  } catch (err) {
    // Found before the student signs in: the code could not be redeemed afterwards.
    throw new ApiError('service_unavailable', 'University login through this provider is not available now.', {
      detail: `${idp.id}: ${(err as Error).message}`,
    });
  }
  let config;
  try {
    config = await deps.oidcDiscovery.configuration(idp, secret);
  } catch (err) {
    throw new ApiError('service_unavailable', 'The identity provider cannot be reached now; try again later.', {
      retryAfterSeconds: 30,
      detail: `OpenID Connect discovery of ${idp.entityId}: ${(err as { code?: string; message?: string }).code ?? (err as Error).message}`,
    });
  }
  return authorizationUrl(config, idp, { baseUrl: deps.config.baseUrl, ...input });
}
