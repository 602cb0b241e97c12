import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, rmSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { TestClock } from '../../src/domain/clock.ts';
import { createLogger } from '../../src/logging.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { migrate, openStore, type Store } from '../../src/store/db.ts';
import { isDatabaseUnavailable } from '../../src/store/unavailable.ts';
import { buildTestApp, testConfig } from '../support/harness.ts';

/**
 * SQLite on a full disk: a small tmpfs that the test mounts (it needs root; elsewhere the suite is
 * skipped with a notice) and then fills. Writes answer 503 with Retry-After, /readyz fails, the log
 * keeps SQLite's own error, and everything works again once there is room.
 */

const isRoot = process.getuid?.() === 0;
const SKIP = isRoot ? false : 'needs root to mount a small tmpfs (CI runs as root)';

describe('a full disk [sqlite]', { skip: SKIP }, () => {
  let dir: string;
  let store: Store;
  let app: FastifyInstance;
  let auth: { authorization: string };
  let appId: string;
  const lines: string[] = [];
  const filler = () => join(dir, 'filler');

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'matricula-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir]);
    store = await openStore(`sqlite:${join(dir, 'test.sqlite')}`);
    await migrate(store);
    const clock = new TestClock();
    await seedSandboxIssuers(store.db, clock);
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ logLevel: 'info', logFormat: 'json' }, destination);
    ({ app } = await buildTestApp(store, clock, testConfig(), logger));
    const created = await createOrganization({ db: store.db, clock }, { name: 'Full disk', environment: 'sandbox' });
    auth = { authorization: `Bearer ${created.apiKey.rawSecret}` };
    appId = created.application.id;
  });
  after(async () => {
    await app?.close();
    await store?.close();
    if (dir) {
      execFileSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const create = () =>
    app.inject({
      method: 'POST',
      url: '/verification/v1/sessions',
      headers: auth,
      payload: {
        appId,
        purpose: 'Disk full',
        requiredClaims: ['is_active_student'],
        metadata: { a: 'x'.repeat(400), b: 'y'.repeat(400), c: 'z'.repeat(400) },
      },
    });

  /** Writes a file until the filesystem has no room left. */
  function fillDisk(): void {
    const fd = openSync(filler(), 'w');
    const chunk = Buffer.alloc(64 * 1024, 1);
    try {
      for (;;) writeSync(fd, chunk);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      // The last few bytes too, so that no page is left for SQLite.
      for (let size = 32 * 1024; size >= 1; size = Math.floor(size / 2)) {
        try {
          for (;;) writeSync(fd, chunk.subarray(0, size));
        } catch {
          /* full at this size: try smaller */
        }
      }
    } finally {
      closeSync(fd);
    }
  }

  test('writes answer 503 with Retry-After, /readyz fails, the log names SQLITE_FULL', async () => {
    const first = await create();
    assert.equal(first.statusCode, 201, first.body);
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    fillDisk();

    // The WAL may still have room for a few pages: creates succeed until it does not.
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof create>> | undefined;
    for (let i = 0; i < 2000 && !refused; i++) {
      const res = await create();
      statuses.push(res.statusCode);
      if (res.statusCode !== 201) refused = res;
    }
    assert.ok(refused, `no create was refused on a full disk: ${statuses.join(',')}`);
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.json().error.code, 'service_unavailable');
    assert.ok(Number(refused.headers['retry-after']) > 0, 'Retry-After');
    for (let i = 0; i < 5; i++) assert.equal((await create()).statusCode, 503);

    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 503, ready.body);
    assert.ok(Number(ready.headers['retry-after']) > 0);

    const log = lines.join('');
    assert.match(log, /SQLITE_FULL|database or disk is full/);
    assert.doesNotMatch(log, /cannot rollback/);
    assert.doesNotMatch(log, /"statusCode":500|internal_error/);

    unlinkSync(filler());
    assert.equal((await create()).statusCode, 201);
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  });
});

describe('out-of-space and read-only errors are "unavailable"', () => {
  test('PostgreSQL and SQLite codes', () => {
    for (const code of ['53100', '53200', '53300', '25006', '57P01', '57P03', '08006', 'ECONNREFUSED'])
      assert.ok(isDatabaseUnavailable(Object.assign(new Error('x'), { code })), code);
    for (const code of ['SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_IOERR_WRITE', 'SQLITE_BUSY'])
      assert.ok(isDatabaseUnavailable(Object.assign(new Error('x'), { code })), code);
    // Wrapped, as a driver's error may be.
    assert.ok(isDatabaseUnavailable(new Error('outer', { cause: Object.assign(new Error('x'), { code: '53100' }) })));
    // Faults and bad requests are not: a 500 or a 4xx stays one.
    for (const code of ['23505', '42P01', '22P02', '57014', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR', 'ERR_X'])
      assert.ok(!isDatabaseUnavailable(Object.assign(new Error('x'), { code })), code);
    assert.ok(!isDatabaseUnavailable(new Error('plain')));
  });

  test("a transaction SQLite rolled back by itself fails with its own error, not the ROLLBACK's", async () => {
    // SQLite rolls back on its own on SQLITE_FULL and some I/O errors; RAISE(ROLLBACK) in a trigger
    // does the same on demand.
    const memory = await openStore('sqlite::memory:');
    try {
      await sql`create table t (x integer)`.execute(memory.db);
      await sql`create trigger t_full before insert on t begin select raise(rollback, 'rolled back by SQLite'); end`.execute(
        memory.db,
      );
      await assert.rejects(
        memory.db.transaction().execute((trx) => sql`insert into t values (1)`.execute(trx)),
        /rolled back by SQLite/,
      );
      // The connection is free and works.
      assert.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(memory.db)).rows, [{ one: 1 }]);
    } finally {
      await memory.close();
    }
  });
});
