import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';

export interface Organization {
  id: string;
  name: string;
  createdAt: string;
}

export async function insertOrganization(db: Db, org: Organization): Promise<void> {
  await db.insertInto('organizations').values({ id: org.id, name: org.name, created_at: org.createdAt }).execute();
}

export async function findOrganization(db: Db, id: string): Promise<Organization | undefined> {
  const row = await db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
  return row && { id: row.id, name: row.name, createdAt: row.created_at };
}

/** Every organization, newest first (the admin API). */
export async function listOrganizations(db: Db, page: PageRequest): Promise<Page<Organization>> {
  return fetchPage(db.selectFrom('organizations').selectAll(), 'id', page, (row) => ({
    id: row.id,
    name: row.name,
    createdAt: row.created_at,
  }));
}
