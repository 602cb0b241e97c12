import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../domain/clock.ts';
import { IDEMPOTENCY_TTL_MS, principalScope, walletScope } from '../domain/idempotency.ts';
import { ApiError } from '../errors.ts';
import type { Db } from '../services/deps.ts';
import {
  claimIdempotencyKey,
  completeIdempotency,
  findIdempotency,
  releaseIdempotency,
} from '../services/idempotency.ts';
import { routeOf } from './route-options.ts';

const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { scope: string; key: string } | null;
  }
  interface FastifyContextConfig {
    /**
     * Dotted paths of response fields that hold a secret shown once (e.g. `data.rawSecret`).
     * They are never written to the replay store: a replay returns them as null.
     */
    secretFields?: string[];
  }
}

/** The response as stored for replays: secrets shown once are nulled, never persisted. */
function storableBody(payload: string, secretFields: string[] | undefined): string {
  if (!secretFields?.length) return payload;
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return payload;
  }
  for (const path of secretFields) {
    const parts = path.split('.');
    let node = body as Record<string, unknown> | undefined;
    for (const part of parts.slice(0, -1)) node = node?.[part] as Record<string, unknown> | undefined;
    const last = parts[parts.length - 1];
    if (node && typeof node === 'object' && last in node) node[last] = null;
  }
  return JSON.stringify(body);
}

function fingerprintOf(request: FastifyRequest): string {
  const path = request.url.split('?')[0];
  return createHash('sha256')
    .update(`${request.method} ${path}\n${JSON.stringify(request.body ?? null)}`)
    .digest('hex');
}

function stringField(value: unknown, name: string): string | undefined {
  const field = value && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;
  return typeof field === 'string' && field.length > 0 ? field : undefined;
}

/**
 * Whose keys these are. An API key's requests share its organization and environment. A wallet's
 * request carries no key: what authorizes it is the session id and the nonce, so its keys are
 * scoped to those two (hashed: the nonce is a secret), and a wallet that knows neither cannot take
 * a key another wallet uses. An unauthenticated request that names no session and nonce has no
 * scope, and its Idempotency-Key is ignored.
 */
function scopeOf(request: FastifyRequest): string | undefined {
  if (request.principal) return principalScope(request.principal.orgId, request.principal.environment);
  const sessionId = stringField(request.params, 'sessionId') ?? stringField(request.body, 'sessionId');
  const nonce = stringField(request.body, 'nonce');
  if (!sessionId || !nonce) return undefined;
  return walletScope(sessionId, nonce);
}

/**
 * `Idempotency-Key` on POST: the first request's response is kept 24 h and replayed for the same
 * key and the same request; the same key with another request is a 409, as is a key whose first
 * request is still running. Keys are scoped to the caller's organization and environment, or for a
 * wallet to the session and its nonce (scopeOf). A secret shown once (a raw API key) is not kept
 * for replays: the replay carries null instead.
 */
export function installIdempotency(app: FastifyInstance, deps: { db: Db; clock: Clock }): void {
  const { db, clock } = deps;
  app.decorateRequest('idempotency', null);

  // Callback-style: most requests carry no key, and an async hook costs a promise per request.
  app.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const raw = request.headers['idempotency-key'];
    if (request.method !== 'POST' || raw === undefined) return done();
    claimOrReplay(request, reply, raw).then((replayed) => {
      // A replay was sent: the handler does not run, and `done` is not called.
      if (!replayed) done();
    }, done);
  });

  /** Claims the key for this request, or answers with the stored response (true). */
  async function claimOrReplay(request: FastifyRequest, reply: FastifyReply, raw: string | string[]): Promise<boolean> {
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (!KEY_SHAPE.test(key))
      throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 printable characters.', {
        param: 'Idempotency-Key',
      });
    const scope = scopeOf(request);
    if (!scope) return false;
    const fingerprint = fingerprintOf(request);
    const now = clock.now();
    const cutoff = new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString();
    await db
      .deleteFrom('idempotency_keys')
      .where('scope', '=', scope)
      .where('idempotency_key', '=', key)
      .where('created_at', '<', cutoff)
      .execute();

    if (await claimIdempotencyKey(db, scope, key, fingerprint, now.toISOString())) {
      request.idempotency = { scope, key };
      return false;
    }
    const existing = await findIdempotency(db, scope, key);
    if (!existing)
      throw new ApiError(
        'idempotency_conflict',
        'A request with this Idempotency-Key is still in progress; retry it shortly.',
      );
    if (existing.fingerprint !== fingerprint) {
      throw new ApiError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.', {
        param: 'Idempotency-Key',
      });
    }
    if (existing.state === 'in_progress')
      throw new ApiError(
        'idempotency_conflict',
        'A request with this Idempotency-Key is still in progress; retry it shortly.',
      );
    reply
      .status(existing.statusCode)
      .header('idempotent-replayed', 'true')
      .type('application/json')
      .send(existing.body);
    return true;
  }

  app.addHook('onSend', (request, reply, payload, done) => {
    const claim = request.idempotency;
    if (!claim) return done(null, payload);
    request.idempotency = null;
    const settled =
      reply.statusCode >= 500
        ? releaseIdempotency(db, claim.scope, claim.key)
        : completeIdempotency(
            db,
            claim.scope,
            claim.key,
            reply.statusCode,
            storableBody(String(payload), routeOf(request).config?.secretFields),
          );
    settled.then(
      () => done(null, payload),
      (err: Error) => done(err),
    );
  });
}
