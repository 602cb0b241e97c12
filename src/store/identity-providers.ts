import type { Environment } from '../domain/environment.ts';
import type { IdentityProvider } from '../domain/identity-providers.ts';
import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import type { IdentityProvidersTable } from './schema.ts';

/** A stored provider and, for OpenID Connect, its client secret as sealed at rest. */
export interface StoredIdentityProvider extends IdentityProvider {
  clientSecretSealed: string | null;
}

function toProvider(row: IdentityProvidersTable): StoredIdentityProvider {
  return {
    id: row.id,
    environment: row.environment,
    protocol: row.protocol,
    entityId: row.entity_id,
    name: row.name,
    domain: row.domain,
    country: row.country,
    scopes: JSON.parse(row.scopes) as string[],
    ...(row.protocol === 'saml'
      ? { saml: { ssoUrl: row.sso_url ?? '', certificates: JSON.parse(row.certificates ?? '[]') as string[] } }
      : { oidc: { clientId: row.client_id ?? '', affiliationClaim: row.affiliation_claim ?? '' } }),
    federation: row.federation,
    createdAt: row.created_at,
    clientSecretSealed: row.client_secret_sealed,
  };
}

function toRow(p: StoredIdentityProvider): IdentityProvidersTable {
  return {
    id: p.id,
    environment: p.environment,
    protocol: p.protocol,
    entity_id: p.entityId,
    name: p.name,
    domain: p.domain,
    country: p.country,
    scopes: JSON.stringify(p.scopes),
    sso_url: p.saml?.ssoUrl ?? null,
    certificates: p.saml ? JSON.stringify(p.saml.certificates) : null,
    client_id: p.oidc?.clientId ?? null,
    client_secret_sealed: p.clientSecretSealed,
    affiliation_claim: p.oidc?.affiliationClaim ?? null,
    federation: p.federation,
    created_at: p.createdAt,
  };
}

/** Adds a provider; false when one with its entity id is registered in its environment already. */
export async function insertIdentityProvider(db: Db, provider: StoredIdentityProvider): Promise<boolean> {
  const result = await db
    .insertInto('identity_providers')
    .values(toRow(provider))
    .onConflict((oc) => oc.columns(['environment', 'entity_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

/**
 * Replaces the entries of one federation in one environment by `providers` (a refresh of its
 * aggregate): in one transaction, so a reader sees the old set or the new one.
 */
export async function replaceFederation(
  db: Db,
  federation: string,
  environment: Environment,
  providers: StoredIdentityProvider[],
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom('identity_providers')
      .where('federation', '=', federation)
      .where('environment', '=', environment)
      .execute();
    for (let i = 0; i < providers.length; i += 200)
      await trx
        .insertInto('identity_providers')
        .values(providers.slice(i, i + 200).map(toRow))
        .onConflict((oc) => oc.columns(['environment', 'entity_id']).doNothing())
        .execute();
  });
}

export async function findIdentityProvider(db: Db, id: string): Promise<StoredIdentityProvider | undefined> {
  const row = await db.selectFrom('identity_providers').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toProvider(row);
}

export async function findIdentityProviderByEntity(
  db: Db,
  environment: Environment,
  entityId: string,
): Promise<StoredIdentityProvider | undefined> {
  const row = await db
    .selectFrom('identity_providers')
    .selectAll()
    .where('environment', '=', environment)
    .where('entity_id', '=', entityId)
    .executeTakeFirst();
  return row && toProvider(row);
}

/** Every provider, by environment and name (the CLI, the portal's search list). */
export async function listIdentityProviders(db: Db, environment?: Environment): Promise<StoredIdentityProvider[]> {
  let query = db.selectFrom('identity_providers').selectAll().orderBy('environment').orderBy('name').orderBy('id');
  if (environment) query = query.where('environment', '=', environment);
  return (await query.execute()).map(toProvider);
}

/** One page, newest first (the admin API). */
export async function listIdentityProvidersPage(
  db: Db,
  page: PageRequest,
  environment?: Environment,
): Promise<Page<StoredIdentityProvider>> {
  const query = db
    .selectFrom('identity_providers')
    .selectAll()
    .$if(environment !== undefined, (q) => q.where('environment', '=', environment!));
  return fetchPage(query, 'id', page, toProvider);
}

export async function deleteIdentityProvider(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('identity_providers').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** The entries loaded from one federation aggregate (a refresh diffs against them). */
export async function federationEntries(db: Db, federation: string): Promise<StoredIdentityProvider[]> {
  return (await db.selectFrom('identity_providers').selectAll().where('federation', '=', federation).execute()).map(
    toProvider,
  );
}

/**
 * Adds or updates entries of `federation` in one statement: a new entity is inserted, an entity
 * already loaded from this federation gets what its metadata now says (its id stays, so a login in
 * flight still finds it), and an entity registered alone or by another federation is left as it
 * is. Returns how many rows were written.
 */
export async function upsertFederationEntries(
  db: Db,
  federation: string,
  providers: StoredIdentityProvider[],
): Promise<number> {
  if (providers.length === 0) return 0;
  const result = await db
    .insertInto('identity_providers')
    .values(providers.map(toRow))
    .onConflict((oc) =>
      oc
        .columns(['environment', 'entity_id'])
        .doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          domain: eb.ref('excluded.domain'),
          country: eb.ref('excluded.country'),
          scopes: eb.ref('excluded.scopes'),
          sso_url: eb.ref('excluded.sso_url'),
          certificates: eb.ref('excluded.certificates'),
        }))
        .where('identity_providers.federation', '=', federation),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

/** Removes entries by id, only those of `federation`. */
export async function deleteFederationEntries(db: Db, federation: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await db
    .deleteFrom('identity_providers')
    .where('federation', '=', federation)
    .where('id', 'in', ids)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
