import type { Selectable } from 'kysely';
import type { Db } from './db.ts';
import type { Environment } from '../domain/environment.ts';
import type { Session } from '../domain/session.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import { prepareQuery } from './prepared.ts';
import type { ApiKeysTable, SessionsTable } from './schema.ts';
import { SESSION_COLUMNS, toSession } from './sessions.ts';

export interface ApiKey {
  id: string;
  appId: string;
  orgId: string;
  name: string;
  environment: Environment;
  keyHint: string;
  createdAt: string;
}

function toApiKey(row: Omit<ApiKeysTable, 'key_hash'>): ApiKey {
  return {
    id: row.id,
    appId: row.app_id,
    orgId: row.org_id,
    name: row.name,
    environment: row.environment,
    keyHint: row.key_hint,
    createdAt: row.created_at,
  };
}

const PUBLIC_COLUMNS = ['id', 'app_id', 'org_id', 'name', 'environment', 'key_hint', 'created_at'] as const;

export async function insertApiKey(db: Db, key: ApiKey, keyHash: string): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      id: key.id,
      app_id: key.appId,
      org_id: key.orgId,
      name: key.name,
      environment: key.environment,
      key_hash: keyHash,
      key_hint: key.keyHint,
      created_at: key.createdAt,
    })
    .execute();
}

export async function findApiKey(db: Db, orgId: string, id: string): Promise<ApiKey | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select(PUBLIC_COLUMNS)
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return row && toApiKey(row);
}

/** A key by id, in any organization: the operator's lookup (CLI `keys revoke`). */
export async function findApiKeyById(db: Db, id: string): Promise<ApiKey | undefined> {
  const row = await db.selectFrom('api_keys').select(PUBLIC_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && toApiKey(row);
}

export async function listApiKeys(
  db: Db,
  filter: { orgId: string; environment: Environment; appId?: string },
  page: PageRequest,
): Promise<Page<ApiKey>> {
  let query = db
    .selectFrom('api_keys')
    .select(PUBLIC_COLUMNS)
    .where('org_id', '=', filter.orgId)
    .where('environment', '=', filter.environment);
  if (filter.appId) query = query.where('app_id', '=', filter.appId);
  return fetchPage(query, 'id', page, toApiKey);
}

export async function keysOfApplication(db: Db, appId: string): Promise<ApiKey[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(PUBLIC_COLUMNS)
    .where('app_id', '=', appId)
    .orderBy('id', 'desc')
    .execute();
  return rows.map(toApiKey);
}

/** What authentication needs about a presented secret's hash. */
export type KeyLookup =
  { kind: 'active'; key: ApiKey; appStatus: 'active' | 'archived' } | { kind: 'revoked' } | { kind: 'unknown' };

const KEY_COLUMNS = [
  'api_keys.id',
  'api_keys.app_id',
  'api_keys.org_id',
  'api_keys.name',
  'api_keys.environment',
  'api_keys.key_hint',
  'api_keys.created_at',
  'applications.status as app_status',
] as const;

const keyByHash = prepareQuery('key_by_hash', (db, p: { keyHash: string }) =>
  db
    .selectFrom('api_keys')
    .innerJoin('applications', 'applications.id', 'api_keys.app_id')
    .select(KEY_COLUMNS)
    .where('api_keys.key_hash', '=', p.keyHash),
);

const revokedByHash = prepareQuery('revoked_by_hash', (db, p: { keyHash: string }) =>
  db.selectFrom('revoked_keys').select('key_id').where('key_hash', '=', p.keyHash),
);

/** A key's columns as `key_*` (read by {@link keyOfRow}) and its application's status. */
export const KEY_ROW_COLUMNS = [
  'api_keys.id as key_id',
  'api_keys.app_id as key_app_id',
  'api_keys.org_id as key_org_id',
  'api_keys.name as key_name',
  'api_keys.environment as key_environment',
  'api_keys.key_hint',
  'api_keys.created_at as key_created_at',
  'applications.status as app_status',
] as const;

/**
 * The key and, in the same query, the session `sessionId` if it belongs to the key's organization:
 * reading a session with its key costs one round trip instead of two.
 */
const keyWithSession = prepareQuery('key_with_session', (db, p: { keyHash: string; sessionId: string }) =>
  db
    .selectFrom('api_keys')
    .innerJoin('applications', 'applications.id', 'api_keys.app_id')
    .leftJoin('sessions', (join) =>
      join.on('sessions.id', '=', p.sessionId).onRef('sessions.org_id', '=', 'api_keys.org_id'),
    )
    .select(KEY_ROW_COLUMNS)
    .select(SESSION_COLUMNS)
    .where('api_keys.key_hash', '=', p.keyHash),
);

/** The columns `key_*` of {@link keyWithSession}'s row, as a key. */
export function keyOfRow(row: {
  key_id: string;
  key_app_id: string;
  key_org_id: string;
  key_name: string;
  key_environment: Environment;
  key_hint: string;
  key_created_at: string;
}): ApiKey {
  return {
    id: row.key_id,
    appId: row.key_app_id,
    orgId: row.key_org_id,
    name: row.key_name,
    environment: row.key_environment,
    keyHint: row.key_hint,
    createdAt: row.key_created_at,
  };
}

/** What a hash no active key has is: a revoked key's, or unknown. */
export async function revokedOrUnknown(db: Db, keyHash: string): Promise<KeyLookup> {
  const { rows } = await revokedByHash.execute(db, { keyHash });
  return rows.length > 0 ? { kind: 'revoked' } : { kind: 'unknown' };
}

export async function lookupKeyByHash(db: Db, keyHash: string): Promise<KeyLookup> {
  const [row] = (await keyByHash.execute(db, { keyHash })).rows;
  if (row) return { kind: 'active', key: toApiKey(row), appStatus: row.app_status };
  return revokedOrUnknown(db, keyHash);
}

/**
 * {@link lookupKeyByHash}, and with an active key the session `sessionId` of the key's
 * organization (undefined when there is none: another organization's session is never read).
 */
export async function lookupKeyWithSession(
  db: Db,
  keyHash: string,
  sessionId: string,
): Promise<KeyLookup & { session?: Session }> {
  const [row] = (await keyWithSession.execute(db, { keyHash, sessionId })).rows;
  if (!row) return revokedOrUnknown(db, keyHash);
  const key = keyOfRow(row);
  const session = row.id === null ? undefined : toSession(row as Selectable<SessionsTable>);
  return { kind: 'active', key, appStatus: row.app_status, session };
}

/**
 * Deletes the key and puts its hash on the deny-list; run inside a transaction. False when the
 * key was already gone (a concurrent revocation won).
 */
export async function revokeApiKey(db: Db, key: ApiKey, revokedAt: string): Promise<boolean> {
  const row = await db.selectFrom('api_keys').select('key_hash').where('id', '=', key.id).executeTakeFirst();
  if (!row) return false;
  await db
    .insertInto('revoked_keys')
    .values({ key_hash: row.key_hash, key_id: key.id, app_id: key.appId, org_id: key.orgId, revoked_at: revokedAt })
    .onConflict((oc) => oc.column('key_hash').doNothing())
    .execute();
  const deleted = await db.deleteFrom('api_keys').where('id', '=', key.id).executeTakeFirst();
  return Number(deleted.numDeletedRows) === 1;
}
