import type { Environment } from '../domain/environment.ts';
import type { Db } from './db.ts';
import type { IdentityFederationsTable } from './schema.ts';

/** Federation metadata aggregates (docs/university-login.md); their IdPs are identity_providers rows. */
export interface IdentityFederation {
  id: string;
  environment: Environment;
  name: string;
  /** Null when loaded from a file: nothing to refresh from. */
  metadataUrl: string | null;
  /** Country of entries whose metadata tells none. */
  defaultCountry: string | null;
  signingCertificate: string;
  validUntil: string | null;
  cacheDurationSeconds: number | null;
  entityCount: number;
  refreshedAt: string | null;
  nextRefreshAt: string | null;
  lastError: string | null;
  createdAt: string;
}

function toFederation(row: IdentityFederationsTable): IdentityFederation {
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    metadataUrl: row.metadata_url,
    defaultCountry: row.default_country,
    signingCertificate: row.signing_certificate,
    validUntil: row.valid_until,
    cacheDurationSeconds: row.cache_duration_seconds === null ? null : Number(row.cache_duration_seconds),
    entityCount: Number(row.entity_count),
    refreshedAt: row.refreshed_at,
    nextRefreshAt: row.next_refresh_at,
    lastError: row.last_error,
    createdAt: row.created_at,
  };
}

export async function insertFederation(db: Db, f: IdentityFederation): Promise<void> {
  await db
    .insertInto('identity_federations')
    .values({
      id: f.id,
      environment: f.environment,
      name: f.name,
      metadata_url: f.metadataUrl,
      default_country: f.defaultCountry,
      signing_certificate: f.signingCertificate,
      valid_until: f.validUntil,
      cache_duration_seconds: f.cacheDurationSeconds,
      entity_count: f.entityCount,
      refreshed_at: f.refreshedAt,
      next_refresh_at: f.nextRefreshAt,
      last_error: f.lastError,
      created_at: f.createdAt,
    })
    .execute();
}

/** What a load or a failed refresh changes. */
export type FederationStatus = Pick<
  IdentityFederation,
  'validUntil' | 'cacheDurationSeconds' | 'entityCount' | 'refreshedAt' | 'nextRefreshAt' | 'lastError'
>;

export async function updateFederationStatus(db: Db, id: string, s: Partial<FederationStatus>): Promise<void> {
  await db
    .updateTable('identity_federations')
    .set({
      ...(s.validUntil !== undefined ? { valid_until: s.validUntil } : {}),
      ...(s.cacheDurationSeconds !== undefined ? { cache_duration_seconds: s.cacheDurationSeconds } : {}),
      ...(s.entityCount !== undefined ? { entity_count: s.entityCount } : {}),
      ...(s.refreshedAt !== undefined ? { refreshed_at: s.refreshedAt } : {}),
      ...(s.nextRefreshAt !== undefined ? { next_refresh_at: s.nextRefreshAt } : {}),
      ...(s.lastError !== undefined ? { last_error: s.lastError } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export async function findFederation(db: Db, id: string): Promise<IdentityFederation | undefined> {
  const row = await db.selectFrom('identity_federations').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toFederation(row);
}

export async function listFederations(db: Db, environment?: Environment): Promise<IdentityFederation[]> {
  let query = db.selectFrom('identity_federations').selectAll().orderBy('environment').orderBy('name').orderBy('id');
  if (environment) query = query.where('environment', '=', environment);
  return (await query.execute()).map(toFederation);
}

/** Federations due for a refresh at `now`, or past their validUntil with entries still loaded. */
export async function dueFederations(db: Db, now: string): Promise<IdentityFederation[]> {
  return (
    await db
      .selectFrom('identity_federations')
      .selectAll()
      .where((eb) =>
        eb.or([eb('next_refresh_at', '<=', now), eb.and([eb('valid_until', '<=', now), eb('entity_count', '>', 0)])]),
      )
      .orderBy('next_refresh_at')
      .execute()
  ).map(toFederation);
}

export async function deleteFederation(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('identity_federations').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}
