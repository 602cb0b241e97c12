import { sql, type Kysely } from 'kysely';
import { capabilitiesOf } from './dialect.ts';

/**
 * Index changes a migration makes to tables that may be large. On PostgreSQL a plain CREATE INDEX
 * locks the table against writes for the whole build (minutes on tens of millions of rows): here
 * the index is built CONCURRENTLY, which lets reads and writes go on, and dropped CONCURRENTLY.
 * Neither may run inside a transaction, so a migration that uses these declares
 * `transactional = false` (store/db.ts runs it outside one). Both are idempotent: a build that was
 * interrupted leaves an INVALID index behind, which is dropped and built again. SQLite builds
 * under its write lock, as it must; an index there is built in one pass over the table.
 */

/** `name` on `table (columns…)`, partial when `where` is given (SQL text written by a migration, never input). */
export interface IndexDefinition {
  name: string;
  table: string;
  columns: readonly string[];
  where?: string;
}

const PLAIN_NAME = /^[a-z_][a-z0-9_]*$/;

function checked(definition: IndexDefinition): IndexDefinition {
  for (const name of [definition.name, definition.table, ...definition.columns])
    if (!PLAIN_NAME.test(name)) throw new Error(`online-index: plain names only (${name})`);
  return definition;
}

/**
 * Whether to build or drop CONCURRENTLY: on PostgreSQL, while the table holds rows. An empty table
 * (a new installation, every test schema) has nothing to wait for, and a CONCURRENTLY build waits
 * for every older transaction in the whole database: two of them at once, in two schemas of one
 * database, deadlock ("deadlock detected", seen with test files migrating side by side).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see an untyped instance
async function buildsOnline(db: Kysely<any>, table: string): Promise<boolean> {
  if (capabilitiesOf(db).name !== 'postgres') return false;
  const { rows } = await sql<{ has: boolean }>`select exists (select 1 from ${sql.table(table)}) as has`.execute(db);
  return rows[0]?.has === true;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see an untyped instance
export async function createIndexOnline(db: Kysely<any>, definition: IndexDefinition): Promise<void> {
  const { name, table, columns, where } = checked(definition);
  const online = await buildsOnline(db, table);
  if (capabilitiesOf(db).name === 'postgres') {
    const { rows } = await sql<{ valid: boolean }>`
      select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
      where c.relname = ${name} and c.relnamespace = current_schema()::regnamespace`.execute(db);
    if (rows[0]?.valid === true) return;
    if (rows[0]) await sql.raw(`drop index ${online ? 'concurrently ' : ''}if exists ${name}`).execute(db);
  }
  const text =
    `create index ${online ? 'concurrently ' : ''}if not exists ${name} on ${table} (${columns.join(', ')})` +
    (where === undefined ? '' : ` where ${where}`);
  await sql.raw(text).execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see an untyped instance
export async function dropIndexOnline(db: Kysely<any>, name: string, table: string): Promise<void> {
  if (!PLAIN_NAME.test(name) || !PLAIN_NAME.test(table)) throw new Error(`online-index: plain names only (${name})`);
  const online = await buildsOnline(db, table);
  await sql.raw(`drop index ${online ? 'concurrently ' : ''}if exists ${name}`).execute(db);
}
