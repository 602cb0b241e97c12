import type { Environment } from '../domain/environment.ts';
import type { Db } from './db.ts';
import { fetchPage, type Page, type PageRequest } from './pagination.ts';
import type { Selectable } from 'kysely';
import type { ApplicationsTable } from './schema.ts';
import { endpointCounts } from './webhooks.ts';

export interface Application {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  environment: Environment;
  status: 'active' | 'archived';
  createdAt: string;
  updatedAt: string;
  /** Origins the portal may send this application's students back to and be framed by. */
  allowedReturnOrigins: string[];
}

/** An application with the counts its list entry shows. */
export interface ApplicationSummary extends Application {
  keyCount: number;
  webhookCount: number;
}

function toApplication(row: Selectable<ApplicationsTable>): Application {
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    description: row.description,
    environment: row.environment,
    status: row.status,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    allowedReturnOrigins: row.allowed_return_origins ? (JSON.parse(row.allowed_return_origins) as string[]) : [],
  };
}

const originsColumn = (origins: string[]) => (origins.length > 0 ? JSON.stringify(origins) : null);

export async function insertApplication(db: Db, app: Application): Promise<void> {
  await db
    .insertInto('applications')
    .values({
      id: app.id,
      org_id: app.orgId,
      name: app.name,
      description: app.description,
      environment: app.environment,
      status: app.status,
      created_at: app.createdAt,
      updated_at: app.updatedAt,
      allowed_return_origins: originsColumn(app.allowedReturnOrigins),
    })
    .execute();
}

/** The application if it belongs to `orgId` (another organization's app does not exist for the caller). */
export async function findApplication(db: Db, orgId: string, id: string): Promise<Application | undefined> {
  const row = await db
    .selectFrom('applications')
    .selectAll()
    .where('id', '=', id)
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return row && toApplication(row);
}

export async function updateApplication(
  db: Db,
  id: string,
  changes: Partial<Pick<Application, 'name' | 'description' | 'status' | 'allowedReturnOrigins'>>,
  updatedAt: string,
): Promise<void> {
  const { allowedReturnOrigins, ...columns } = changes;
  await db
    .updateTable('applications')
    .set({
      ...columns,
      ...(allowedReturnOrigins ? { allowed_return_origins: originsColumn(allowedReturnOrigins) } : {}),
      updated_at: updatedAt,
    })
    .where('id', '=', id)
    .execute();
}

/** Counts shown beside an application: its API keys and its webhook endpoints. */
export async function countsFor(
  db: Db,
  appIds: string[],
): Promise<Map<string, { keyCount: number; webhookCount: number }>> {
  const counts = new Map(appIds.map((id) => [id, { keyCount: 0, webhookCount: 0 }]));
  if (appIds.length === 0) return counts;
  const keys = await db
    .selectFrom('api_keys')
    .select(['app_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('app_id', 'in', appIds)
    .groupBy('app_id')
    .execute();
  for (const row of keys) counts.get(row.app_id)!.keyCount = Number(row.n);
  for (const [appId, n] of await endpointCounts(db, appIds)) counts.get(appId)!.webhookCount = n;
  return counts;
}

export async function listActiveApplications(
  db: Db,
  orgId: string,
  page: PageRequest,
): Promise<Page<ApplicationSummary>> {
  const query = db.selectFrom('applications').selectAll().where('org_id', '=', orgId).where('status', '=', 'active');
  const result = await fetchPage(query, 'id', page, toApplication);
  const counts = await countsFor(
    db,
    result.items.map((a) => a.id),
  );
  return { ...result, items: result.items.map((a) => ({ ...a, ...counts.get(a.id)! })) };
}

/** Operator access (CLI): an application by id, whatever its organization. */
export async function findApplicationById(db: Db, id: string): Promise<Application | undefined> {
  const row = await db.selectFrom('applications').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toApplication(row);
}
