import { sql } from 'kysely';
import type { Db } from '../../src/store/db.ts';

/**
 * The generic plan PostgreSQL settles on for `text` run as a named prepared statement, as the
 * service's pool runs its hot-path queries (`plan_cache_mode = force_generic_plan`: a plan that
 * cannot rely on the values bound). `literals` are the parameters as SQL literals, quoted.
 */
export async function postgresGenericPlan(db: Db, text: string, literals: string[]): Promise<string> {
  return db.connection().execute(async (connection) => {
    await sql`set plan_cache_mode = force_generic_plan`.execute(connection);
    try {
      await sql.raw(`prepare plan_probe as ${text}`).execute(connection);
      const { rows } = await sql
        .raw<{ 'QUERY PLAN': string }>(`explain execute plan_probe(${literals.join(', ')})`)
        .execute(connection);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    } finally {
      await sql`deallocate plan_probe`.execute(connection).catch(() => undefined);
      await sql`reset plan_cache_mode`.execute(connection);
    }
  });
}
