import type { Db } from './db.ts';

/** The statuses an operator set on a sandbox university's credential indexes (`matricula sandbox revoke`). */
export async function sandboxStatuses(db: Db, domain: string): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('sandbox_credential_statuses')
    .select(['idx', 'status'])
    .where('domain', '=', domain)
    .execute();
  return new Map(rows.map((row) => [Number(row.idx), Number(row.status)]));
}

/** Sets (or replaces) the status of one index. */
export async function setSandboxStatus(
  db: Db,
  entry: { domain: string; idx: number; status: number },
  updatedAt: string,
): Promise<void> {
  await db
    .insertInto('sandbox_credential_statuses')
    .values({ domain: entry.domain, idx: entry.idx, status: entry.status, updated_at: updatedAt })
    .onConflict((oc) => oc.columns(['domain', 'idx']).doUpdateSet({ status: entry.status, updated_at: updatedAt }))
    .execute();
}
