import type { IssuerKeys, TrustedIssuer } from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';
import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import type { IssuersTable } from './schema.ts';

function toIssuer(row: IssuersTable): TrustedIssuer {
  return {
    id: row.id,
    name: row.name,
    domain: row.domain,
    country: row.country,
    environment: row.environment,
    keys: JSON.parse(row.keys) as IssuerKeys,
    ...(row.anchors ? { anchors: JSON.parse(row.anchors) as string[] } : {}),
    ...(row.metadata_issuer ? { metadataIssuer: row.metadata_issuer } : {}),
  };
}

export interface StoredIssuer extends TrustedIssuer {
  createdAt: string;
}

export async function insertIssuer(db: Db, issuer: TrustedIssuer, createdAt: string): Promise<boolean> {
  const result = await db
    .insertInto('issuers')
    .values({
      id: issuer.id,
      name: issuer.name,
      domain: issuer.domain,
      country: issuer.country,
      environment: issuer.environment,
      keys: JSON.stringify(issuer.keys),
      anchors: issuer.anchors?.length ? JSON.stringify(issuer.anchors) : null,
      metadata_issuer: issuer.metadataIssuer ?? null,
      created_at: createdAt,
    })
    .onConflict((oc) => oc.columns(['domain', 'environment']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

export async function listIssuers(db: Db, environment?: Environment): Promise<StoredIssuer[]> {
  let query = db.selectFrom('issuers').selectAll().orderBy('environment').orderBy('domain');
  if (environment) query = query.where('environment', '=', environment);
  const rows = await query.execute();
  return rows.map((row) => ({ ...toIssuer(row), createdAt: row.created_at }));
}

export async function findIssuer(db: Db, id: string): Promise<StoredIssuer | undefined> {
  const row = await db.selectFrom('issuers').selectAll().where('id', '=', id).executeTakeFirst();
  return row && { ...toIssuer(row), createdAt: row.created_at };
}

export async function deleteIssuer(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('issuers').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** One page of the registry, newest first, optionally of one environment (the admin API). */
export async function listIssuersPage(
  db: Db,
  page: PageRequest,
  environment?: Environment,
): Promise<Page<StoredIssuer>> {
  const query = db
    .selectFrom('issuers')
    .selectAll()
    .$if(environment !== undefined, (q) => q.where('environment', '=', environment!));
  return fetchPage(query, 'id', page, (row) => ({ ...toIssuer(row), createdAt: row.created_at }));
}
