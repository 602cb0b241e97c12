import { generateSecret, hashSecret, hintOf } from '../domain/api-key-format.ts';
import { newId } from '../domain/ids.ts';
import { ApiError, notFound } from '../errors.ts';
import type { Principal } from '../domain/principal.ts';
import { findApiKey, findApiKeyById, insertApiKey, listApiKeys, revokeApiKey, type ApiKey } from '../store/api-keys.ts';
import { findApplicationById, type Application } from '../store/applications.ts';
import type { Environment } from '../domain/environment.ts';
import type { Db } from '../store/db.ts';
import type { PageRequest } from '../store/pagination.ts';
import { applicationForCaller, assertSameEnvironment } from './access.ts';
import type { ServiceDeps } from './deps.ts';

export interface GeneratedKey extends ApiKey {
  /** The full secret: returned once, never stored. */
  rawSecret: string;
}

/** Mints a key for `app` (caller checks already done). Only the hash and the hint are stored. */
export async function issueKey(
  db: Db,
  deps: Pick<ServiceDeps, 'clock'>,
  app: Application,
  name: string,
): Promise<GeneratedKey> {
  const rawSecret = generateSecret(app.environment);
  const key: ApiKey = {
    id: newId('apiKey', deps.clock),
    appId: app.id,
    orgId: app.orgId,
    name,
    environment: app.environment,
    keyHint: hintOf(rawSecret),
    createdAt: deps.clock.now().toISOString(),
  };
  await insertApiKey(db, key, hashSecret(rawSecret));
  return { ...key, rawSecret };
}

export async function generateApiKey(
  deps: ServiceDeps,
  principal: Principal,
  input: { appId: string; name: string; environment: Environment },
): Promise<GeneratedKey> {
  const app = await applicationForCaller(deps.db, principal, input.appId, { param: 'appId', mustBeActive: true });
  if (input.environment !== app.environment) {
    throw new ApiError(
      'invalid_request',
      `environment must match the application's environment (${app.environment}).`,
      { param: 'environment' },
    );
  }
  return issueKey(deps.db, deps, app, input.name);
}

export async function listKeys(deps: ServiceDeps, principal: Principal, filter: { appId?: string }, page: PageRequest) {
  if (filter.appId) await applicationForCaller(deps.db, principal, filter.appId, { param: 'appId' });
  return listApiKeys(
    deps.db,
    { orgId: principal.orgId, environment: principal.environment, appId: filter.appId },
    page,
  );
}

export async function revokeKey(
  deps: ServiceDeps,
  principal: Principal,
  keyId: string,
): Promise<{ id: string; revokedAt: string }> {
  const key = await findApiKey(deps.db, principal.orgId, keyId);
  if (!key) throw notFound('API key', 'keyId');
  assertSameEnvironment(principal, key.environment);
  const revokedAt = deps.clock.now().toISOString();
  const revoked = await deps.db.transaction().execute((trx) => revokeApiKey(trx, key, revokedAt));
  if (!revoked) throw notFound('API key', 'keyId');
  return { id: key.id, revokedAt };
}

/**
 * The reads that authenticate a request (http/auth.ts): a key by the hash of its secret, or with
 * the session the request names in the same statement. The HTTP edge reaches the store through
 * here, like every other caller.
 */
export type { KeyLookup } from '../store/api-keys.ts';
export type { KeyLookups } from '../store/key-lookups.ts';

/** Why the operator's key command did nothing. */
export type OperatorKeyRefusal = 'no_application' | 'archived_application' | 'no_key';

/** The operator mints a key for any active application (CLI `keys create`): no principal, any organization. */
export async function issueKeyAsOperator(
  deps: Pick<ServiceDeps, 'db' | 'clock'>,
  appId: string,
  name: string,
): Promise<{ ok: true; key: GeneratedKey } | { ok: false; reason: OperatorKeyRefusal }> {
  const app = await findApplicationById(deps.db, appId);
  if (!app) return { ok: false, reason: 'no_application' };
  if (app.status !== 'active') return { ok: false, reason: 'archived_application' };
  return { ok: true, key: await issueKey(deps.db, deps, app, name) };
}

/**
 * The operator revokes a key of any organization (CLI `keys revoke`), as `DELETE /org/v1/keys/{id}`
 * does for its own: the very next request with it is refused, in every process.
 */
export async function revokeKeyAsOperator(
  deps: Pick<ServiceDeps, 'db' | 'clock'>,
  keyId: string,
): Promise<{ ok: true; key: ApiKey; revokedAt: string } | { ok: false; reason: OperatorKeyRefusal }> {
  const key = await findApiKeyById(deps.db, keyId);
  if (!key) return { ok: false, reason: 'no_key' };
  const revokedAt = deps.clock.now().toISOString();
  const revoked = await deps.db.transaction().execute((trx) => revokeApiKey(trx, key, revokedAt));
  return revoked ? { ok: true, key, revokedAt } : { ok: false, reason: 'no_key' };
}
