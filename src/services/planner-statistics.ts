import { refreshPlannerStatistics } from '../store/db.ts';
import type { ServiceDeps } from './deps.ts';

/**
 * Renews the query planner's statistics where a table's size changed tenfold since they were
 * taken (SQLite's `PRAGMA optimize`; nothing on PostgreSQL, whose autovacuum does it). A purge
 * planned from statistics of an emptier table scans the whole table once per batch.
 */
export async function refreshStatistics(deps: Pick<ServiceDeps, 'db'>): Promise<void> {
  await refreshPlannerStatistics(deps.db);
}
