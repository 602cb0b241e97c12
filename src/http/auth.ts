import type { FastifyRequest } from 'fastify';
import { hashSecret, parseSecret } from '../domain/api-key-format.ts';
import { ApiError } from '../errors.ts';
import type { Db } from '../store/db.ts';
import { lookupKeyByHash } from '../store/api-keys.ts';
import type { Environment } from '../store/applications.ts';

/** Who is calling: an organization, within one environment, through one key. */
export interface Principal {
  orgId: string;
  environment: Environment;
  keyId: string;
  appId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * Authenticates the bearer key on every request, with no cache: revocation deletes the key and
 * deny-lists its hash in one transaction, so the very next request to any process is refused.
 */
export async function authenticate(db: Db, request: FastifyRequest): Promise<Principal> {
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
  const found = await lookupKeyByHash(db, hashSecret(secret));
  if (found.kind === 'revoked') throw new ApiError('key_revoked', 'This API key has been revoked.');
  if (found.kind === 'unknown') throw new ApiError('unauthenticated', 'Invalid API key.');
  if (found.appStatus !== 'active') throw new ApiError('unauthenticated', "This API key's application is archived.");
  const { key } = found;
  return { orgId: key.orgId, environment: key.environment, keyId: key.id, appId: key.appId };
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('unauthenticated', 'Missing API key.');
  return request.principal;
}
