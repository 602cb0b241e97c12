import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';

/** One line of an organization's audit log: who did what to which resource, when. */
export interface AuditEntry {
  id: string;
  orgId: string;
  /** A member id, or `operator` (CLI, admin API). */
  actor: string;
  action: string;
  target: string | null;
  environment: string | null;
  createdAt: string;
}

export async function insertAuditEntry(db: Db, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      id: entry.id,
      org_id: entry.orgId,
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      environment: entry.environment,
      created_at: entry.createdAt,
    })
    .execute();
}

export async function listAuditEntries(db: Db, orgId: string, page: PageRequest): Promise<Page<AuditEntry>> {
  const query = db.selectFrom('audit_log').selectAll().where('org_id', '=', orgId);
  return fetchPage(query, 'id', page, (row) => ({
    id: row.id,
    orgId: row.org_id,
    actor: row.actor,
    action: row.action,
    target: row.target,
    environment: row.environment,
    createdAt: row.created_at,
  }));
}
