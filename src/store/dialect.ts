import {
  CompiledQuery,
  PostgresAdapter,
  sql,
  SqliteDriver,
  type DatabaseConnection,
  type Kysely,
  type RawBuilder,
} from 'kysely';

/**
 * Every difference between the SQL dialects lives here, as capability flags and small helpers;
 * the rest of the code asks for a capability, never for a dialect name.
 */
export interface DialectCapabilities {
  name: 'sqlite' | 'postgres';
  /** `SELECT … FOR UPDATE SKIP LOCKED` for claiming rows with concurrent workers. */
  skipLocked: boolean;
  /** LISTEN/NOTIFY to wake workers in other processes. */
  listenNotify: boolean;
}

export const SQLITE: DialectCapabilities = { name: 'sqlite', skipLocked: false, listenNotify: false };
export const POSTGRES: DialectCapabilities = { name: 'postgres', skipLocked: true, listenNotify: true };

/** Capabilities of an open Kysely instance (migrations receive only the instance). */
export function capabilitiesOf(db: Kysely<any>): DialectCapabilities {
  return db.getExecutor().adapter instanceof PostgresAdapter ? POSTGRES : SQLITE;
}

/**
 * Text type for ids and other keys that are ordered: PostgreSQL compares with the database's
 * locale unless told otherwise, so ids use the byte order ("C") there, as SQLite does by default.
 */
export function keyTextType(db: Kysely<any>): 'text' | RawBuilder<unknown> {
  return capabilitiesOf(db).name === 'postgres' ? sql`text collate "C"` : 'text';
}

/**
 * better-sqlite3 driver whose transactions start with BEGIN IMMEDIATE: a write transaction takes
 * the write lock up front and waits on busy_timeout, instead of failing with SQLITE_BUSY when
 * another process (the CLI beside the server) wrote in between.
 */
export class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}
