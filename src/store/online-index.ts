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

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see an untyped instance
export async function createIndexOnline(db: Kysely<any>, definition: IndexDefinition): Promise<void> {
  const { name, table, columns, where } = checked(definition);
  const online = capabilitiesOf(db).name === 'postgres';
  if (online) {
    const { rows } = await sql<{ valid: boolean }>`
      select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid
      where c.relname = ${name} and c.relnamespace = current_schema()::regnamespace`.execute(db);
    if (rows[0]?.valid === true) return;
    if (rows[0]) await sql.raw(`drop index concurrently if exists ${name}`).execute(db);
  }
  const text =
    `create index ${online ? 'concurrently ' : ''}if not exists ${name} on ${table} (${columns.join(', ')})` +
    (where === undefined ? '' : ` where ${where}`);
  await sql.raw(text).execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see an untyped instance
export async function dropIndexOnline(db: Kysely<any>, name: string): Promise<void> {
  if (!PLAIN_NAME.test(name)) throw new Error(`online-index: plain names only (${name})`);
  const online = capabilitiesOf(db).name === 'postgres';
  await sql.raw(`drop index ${online ? 'concurrently ' : ''}if exists ${name}`).execute(db);
}
