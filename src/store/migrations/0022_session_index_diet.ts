import type { Kysely } from 'kysely';
import { createIndexOnline, dropIndexOnline } from '../online-index.ts';

/**
 * Issue 30, disk per million sessions on PostgreSQL (1,747 MB, goal 1,500): two indexes of
 * `sessions` held a row for every session ever made and served one query each.
 *
 * - `sessions_open_expiry (status, expires_at)` (92 MB at 1M sessions) served only the expiry
 *   job, which reads open sessions past their deadline: a partial index of the open sessions
 *   alone holds a few rows at any size. Its condition is written as the job's query writes it,
 *   with literals: a planner proves a partial index usable from the query's own text, never from
 *   a bound parameter (store/sessions.ts, `dueForExpiry`).
 * - `sessions_org_env (org_id, environment, id)` (148 MB) served only the organization's
 *   unfiltered list, which now merges one short ordered read per status from
 *   `sessions_org_env_status (org_id, environment, status, id)` (migration 0016), as the
 *   `status=expired` filter already did (store/sessions.ts, `pageOfAny`).
 *
 * Built and dropped without locking the table (store/online-index.ts), hence outside a transaction.
 */
export const transactional = false;

export async function up(db: Kysely<any>): Promise<void> {
  await createIndexOnline(db, {
    name: 'sessions_open_due',
    table: 'sessions',
    columns: ['expires_at'],
    where: "status in ('pending', 'consented')",
  });
  await dropIndexOnline(db, 'sessions_open_expiry', 'sessions');
  await dropIndexOnline(db, 'sessions_org_env', 'sessions');
}
