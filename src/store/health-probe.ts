import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';

/**
 * Below this much free space where the SQLite file lives, the database is not ready: a small
 * update may still fit in pages SQLite already has, while a session insert no longer does.
 */
export const MIN_FREE_DISK_BYTES = 1024 * 1024;

/** SQLite instances and the file each writes (the WAL and journal live beside it). */
const sqliteFiles = new WeakMap<object, string>();

/** Lets {@link probeWrite} check the free space beside `path`, the file `db` writes. */
export function watchDiskOf(db: object, path: string): void {
  if (path !== ':memory:') sqliteFiles.set(db, path);
}

/**
 * Rewrites the probe row: succeeds only if the database can take a write and commit it now. On
 * SQLite, it also fails when the file's disk is nearly full. Throws what the driver throws (a full
 * disk, a read-only database, a lost connection), or an error with SQLite's code for a full disk.
 */
export async function probeWrite(db: Kysely<Database>, at: Date): Promise<void> {
  const path = sqliteFiles.get(db);
  if (path !== undefined) {
    const disk = await statfs(dirname(path));
    const free = disk.bavail * disk.bsize;
    if (free < MIN_FREE_DISK_BYTES)
      throw Object.assign(new Error(`the disk holding ${path} has ${free} bytes free`), { code: 'SQLITE_FULL' });
  }
  await db.updateTable('health_probe').set({ checked_at: at.toISOString() }).where('id', '=', 1).execute();
}
