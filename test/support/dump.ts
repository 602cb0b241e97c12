import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { TestStore } from './harness.ts';

/**
 * The whole content of a test database as text, for checking what is (and is not) stored: on
 * PostgreSQL pg_dump of the test's schema when pg_dump is installed (else every row of every table
 * of the schema), on SQLite every row of every table. `except` leaves out whole tables.
 */
export async function dumpDatabase(testStore: TestStore, options: { except?: string[] } = {}): Promise<string> {
  const except = new Set(options.except ?? []);
  const { db } = testStore.store;
  if (testStore.schema && pgDumpAvailable()) {
    return execFileSync(
      'pg_dump',
      [
        '--data-only',
        '--schema',
        testStore.schema,
        ...[...except].flatMap((table) => ['--exclude-table-data', `${testStore.schema}.${table}`]),
        process.env.TEST_DATABASE_URL!,
      ],
      { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
    );
  }
  const tables = testStore.schema
    ? (
        await sql<{
          name: string;
        }>`select table_name as name from information_schema.tables where table_schema = ${testStore.schema}`.execute(
          db,
        )
      ).rows
    : (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)).rows;
  const parts: string[] = [];
  for (const { name } of tables) {
    if (except.has(name)) continue;
    const rows = (await sql`select * from ${sql.table(name)}`.execute(db)).rows;
    parts.push(`-- ${name}\n${rows.map((row) => JSON.stringify(row)).join('\n')}`);
  }
  return parts.join('\n');
}

let available: boolean | undefined;
function pgDumpAvailable(): boolean {
  if (available === undefined) {
    try {
      execFileSync('pg_dump', ['--version'], { stdio: 'ignore' });
      available = true;
    } catch {
      available = false;
    }
  }
  return available;
}

/**
 * SQLite only: the raw bytes of the database file and of its write-ahead log (`-wal`), as latin1
 * text, for checking that an erased value is in neither: free space, freed pages and old page
 * images included, which no query sees. Undefined on PostgreSQL (its files are the server's).
 */
export function rawDatabaseFiles(testStore: TestStore): { main: string; wal: string } | undefined {
  if (!testStore.url.startsWith('sqlite:')) return undefined;
  const path = testStore.url.replace(/^sqlite:(\/\/)?/, '');
  const read = (file: string) => (existsSync(file) ? readFileSync(file).toString('latin1') : '');
  return { main: read(path), wal: read(`${path}-wal`) };
}
