import { sql } from 'kysely';
import type { ServiceDeps } from './deps.ts';

/** Readiness: the database answers a trivial query. Throws what the driver throws. */
export async function checkDatabase(deps: Pick<ServiceDeps, 'db'>): Promise<void> {
  await sql`select 1`.execute(deps.db);
}
