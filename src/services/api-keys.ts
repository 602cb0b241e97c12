import { generateSecret, hashSecret, hintOf } from '../domain/api-key-format.ts';
import { newId } from '../domain/ids.ts';
import { ApiError, notFound } from '../errors.ts';
import type { Principal } from '../http/auth.ts';
import { findApiKey, insertApiKey, listApiKeys, revokeApiKey, type ApiKey } from '../store/api-keys.ts';
import type { Application, Environment } from '../store/applications.ts';
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
