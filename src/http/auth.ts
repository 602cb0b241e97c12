import type { FastifyRequest } from 'fastify';
import { hashSecret, parseSecret } from '../domain/api-key-format.ts';
import { ApiError } from '../errors.ts';
import type { KeyLookup, KeyLookups } from '../services/api-keys.ts';
import type { Principal } from '../domain/principal.ts';
import type { Session } from '../domain/session.ts';

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
  }
  interface FastifyContextConfig {
    /**
     * The path parameter holding a session id the handler reads: authentication reads that
     * session in the same query as the key, one round trip instead of two.
     */
    readsSession?: string;
  }
}

/** What an id may look like to be looked up at all; anything else is left to validation. */
const PLAUSIBLE_ID = /^[\x21-\x7e]{1,64}$/;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Authenticates the bearer key on every request, with no cache: revocation deletes the key and
 * deny-lists its hash in one transaction, so the very next request to any process is refused. The
 * key, its application's status and, for a route that `readsSession`, the session come back in one
 * query (a compiled, prepared statement: store/prepared.ts).
 */
export async function authenticate(keys: KeyLookups, request: FastifyRequest): Promise<Principal> {
  const header = request.headers.authorization;
  if (!header)
    throw new ApiError(
      'unauthenticated',
      'Missing API key. Send the header Authorization: Bearer sk_test_… or sk_live_….',
    );
  const match = BEARER.exec(header);
  if (!match) throw new ApiError('unauthenticated', 'The Authorization header must be "Bearer <API key>".');
  const secret = match[1];
  // The checksum rejects typos and made-up keys without a database round trip.
  if (!parseSecret(secret)) throw new ApiError('unauthenticated', 'Invalid API key.');
  const found = await lookup(keys, request, hashSecret(secret));
  if (found.kind === 'revoked') throw new ApiError('key_revoked', 'This API key has been revoked.');
  if (found.kind === 'unknown') throw new ApiError('unauthenticated', 'Invalid API key.');
  if (found.appStatus !== 'active') throw new ApiError('unauthenticated', "This API key's application is archived.");
  const { key } = found;
  return { orgId: key.orgId, environment: key.environment, keyId: key.id, appId: key.appId };
}

async function lookup(keys: KeyLookups, request: FastifyRequest, keyHash: string): Promise<KeyLookup> {
  const param = request.routeOptions.config?.readsSession;
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
