import type { FastifyRequest } from 'fastify';
import { hashSecret, parseSecret } from '../domain/api-key-format.ts';
import { ApiError } from '../errors.ts';
import type { KeyLookup, KeyLookups } from '../services/api-keys.ts';
import type { KeyToConfirm, Principal } from '../domain/principal.ts';
import type { Session } from '../domain/session.ts';
import { routeOf } from './route-options.ts';

/** A session read in the same query as the key (see `readsSession`). */
export interface PrefetchedSession {
  sessionId: string;
  /** The session, or null when the caller's organization has none of that id. */
  session: Session | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    prefetchedSession: PrefetchedSession | null;
    /**
     * Set when {@link principal} was recalled rather than read (`confirmsKey`): the key the
     * route's write must confirm. Null for every other request, and once a read confirmed it.
     */
    keyToConfirm: KeyToConfirm | null;
  }
  interface FastifyContextConfig {
    /**
     * The path parameter holding a session id the handler reads: authentication reads that
     * session in the same query as the key, one round trip instead of two.
     */
    readsSession?: string;
    /**
     * The route's one write checks the key itself (store/session-inserts.ts
     * `insertSessionsCheckingKeys`): a request whose key this process authenticated before is
     * admitted without reading it, and the write stores only while the key still exists and its
     * application is active. Any error answered before that write confirms the key first.
     */
    confirmsKey?: boolean;
  }
}

/** What an id may look like to be looked up at all; anything else is left to validation. */
const PLAUSIBLE_ID = /^[\x21-\x7e]{1,64}$/;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Authenticates the bearer key on every request, with no cache: revocation deletes the key and
 * deny-lists its hash in one transaction, so the very next request to any process is refused. The
 * key, its application's status and, for a route that `readsSession`, the session come back in one
 * query (a compiled, prepared statement: store/prepared.ts). The exception, a route that
 * `confirmsKey`: see {@link recalledPrincipal}.
 */
export async function authenticate(keys: KeyLookups, request: FastifyRequest): Promise<Principal> {
  const keyHash = bearerKeyHash(request);
  if (keyHash instanceof ApiError) throw keyHash;
  const found = await lookup(keys, request, keyHash);
  if (found.kind === 'revoked') throw new ApiError('key_revoked', 'This API key has been revoked.');
  if (found.kind === 'unknown') throw new ApiError('unauthenticated', 'Invalid API key.');
  if (found.appStatus !== 'active') throw new ApiError('unauthenticated', "This API key's application is archived.");
  const { key } = found;
  const principal = { orgId: key.orgId, environment: key.environment, keyId: key.id, appId: key.appId };
  keys.remember(keyHash, principal);
  return principal;
}

/** The SHA-256 of the request's bearer key, or why there is none to look up. */
function bearerKeyHash(request: FastifyRequest): string | ApiError {
  const header = request.headers.authorization;
  if (!header)
    return new ApiError(
      'unauthenticated',
      'Missing API key. Send the header Authorization: Bearer sk_test_… or sk_live_….',
    );
  const match = BEARER.exec(header);
  if (!match) return new ApiError('unauthenticated', 'The Authorization header must be "Bearer <API key>".');
  const secret = match[1];
  // The checksum rejects typos and made-up keys without a database round trip.
  if (!parseSecret(secret)) return new ApiError('unauthenticated', 'Invalid API key.');
  return hashSecret(secret);
}

/**
 * For a route that `confirmsKey`, on PostgreSQL: the principal this process last authenticated
 * for the request's key, without a read (the round trip its write then saves), and the key noted
 * in `request.keyToConfirm` for the write to check. Undefined (authenticate as usual) for any other
 * route, a key not seen here, and a request with an Idempotency-Key, whose claim is written before
 * the handler runs.
 */
export function recalledPrincipal(keys: KeyLookups, request: FastifyRequest): Principal | undefined {
  if (!routeOf(request).config?.confirmsKey || request.headers['idempotency-key'] !== undefined) return undefined;
  const keyHash = bearerKeyHash(request);
  if (keyHash instanceof ApiError) return undefined;
  const principal = keys.recall(keyHash);
  if (principal) request.keyToConfirm = { keyId: principal.keyId, keyHash };
  return principal;
}

/**
 * Authenticates a request admitted under a recalled principal, reading its key as usual: when its
 * write refused the key, and before any error is answered to it. Throws authentication's error for
 * a key revoked, unknown or of an archived application since.
 */
export async function confirmPrincipal(keys: KeyLookups, request: FastifyRequest): Promise<Principal> {
  const pending = request.keyToConfirm;
  request.keyToConfirm = null;
  request.principal = null;
  if (pending) keys.forget(pending.keyHash);
  request.principal = await authenticate(keys, request);
  return request.principal;
}

async function lookup(keys: KeyLookups, request: FastifyRequest, keyHash: string): Promise<KeyLookup> {
  const param = routeOf(request).config?.readsSession;
  const sessionId = param ? (request.params as Record<string, unknown> | undefined)?.[param] : undefined;
  // Path parameters are not validated yet: an id of another shape is read by the handler, after validation.
  if (typeof sessionId !== 'string' || !PLAUSIBLE_ID.test(sessionId)) return keys.byHash(keyHash);
  const found = await keys.withSession(keyHash, sessionId);
  if (found.kind === 'active') request.prefetchedSession = { sessionId, session: found.session ?? null };
  return found;
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('unauthenticated', 'Missing API key.');
  return request.principal;
}
