import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Whether the request carries `Authorization: Bearer <expected>`. Both sides are hashed first, so
 * the comparison takes the same time whatever the length or the first differing byte.
 */
export function hasOperatorToken(request: FastifyRequest, expected: string): boolean {
  const match = BEARER.exec(request.headers.authorization ?? '');
  return match !== null && timingSafeEqual(digest(match[1]), digest(expected));
}

/** Refuses the request (401) unless it carries the operator token `expected`; `name` is its variable. */
export function requireOperatorToken(request: FastifyRequest, expected: string, name: string): void {
  if (!hasOperatorToken(request, expected))
    throw new ApiError('unauthenticated', `Send the header Authorization: Bearer <${name}>.`);
}
