import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Fastify from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import {
  analyzeOwnTables,
  besideOtherFiles,
  createTestStore,
  migratingOnline,
  SCHEMA_LOCK_CONNECTION,
  underSchemaLock,
} from '../support/harness.ts';
import { listeningPortIn, loopbackServer } from '../support/server.ts';
import { assertBuildCurrent } from '../support/service-process.ts';
import { waitUntil } from '../support/webhooks.ts';

/** The shared test helpers themselves: a helper that hangs or races fails every suite that uses it. */

const turns = (n: number) => {
  let p = Promise.resolve();
  for (let i = 0; i < n; i++) p = p.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
  return p;
};

test('waitUntil rejects after its bound and stops checking: no loop is left running', async () => {
  let checks = 0;
  await assert.rejects(
    waitUntil(
      () => {
        checks++;
        return false;
      },
      'a condition that never holds',
      { ms: 50 },
    ),
    /timed out after 50 ms waiting for a condition that never holds/,
  );
  const atTimeout = checks;
  await turns(20);
  assert.ok(checks <= atTimeout + 1, `checked ${checks - atTimeout} more times after the timeout`);
});

test('waitUntil with `on` checks at the start and after each event, not in a loop', async () => {
  const events = new EventEmitter();
  let ready = false;
  let checks = 0;
  const waiting = waitUntil(
    () => {
      checks++;
      return ready;
    },
    'the flag',
    { on: [[events, 'changed']] },
  );
  await turns(20);
  assert.equal(checks, 1, 'one check, then it waits for an event');
  events.emit('changed');
  await turns(5);
  assert.equal(checks, 2);
  ready = true;
  events.emit('changed');
  await waiting;
  assert.equal(checks, 3);
  assert.equal(events.listenerCount('changed'), 0, 'its listener is removed');
});

test('waitUntil with `on` checks again when an event arrives during a check', async () => {
  const events = new EventEmitter();
  let state = 0;
  let checks = 0;
  await waitUntil(
    async () => {
      checks++;
      const seen = state;
      // The state changes, and is announced, while this check is under way: its answer is stale.
      if (checks === 1) {
        state = 1;
        events.emit('changed');
      }
      await turns(1);
      return seen === 1;
    },
    'the second state',
    { on: [[events, 'changed']], ms: 1_000 },
  );
  assert.equal(checks, 2);
});

test('loopbackServer: listens before the app exists, serves it, and closes with it', async () => {
  const loopback = await loopbackServer();
  assert.ok(loopback.server.listening);
  assert.equal((loopback.server.address() as { port: number }).port, loopback.port);
  assert.equal(loopback.origin, `http://127.0.0.1:${loopback.port}`);
  const app = Fastify();
  app.get('/here', () => ({ origin: loopback.origin }));
  await loopback.serve(app);
  const res = await fetch(`${loopback.origin}/here`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { origin: loopback.origin });
  await app.close();
  assert.equal(loopback.server.listening, false);
});

test("listeningPortIn reads the API's port, the last one logged, or the metrics port", () => {
  const log = [
    '{"level":30,"msg":"Server listening at http://127.0.0.1:40001"}',
    '{"level":30,"metricsPort":40001,"msg":"Metrics, /healthz and /readyz on port 40001"}',
    '{"level":30,"msg":"Server listening at http://127.0.0.1:40002"}',
    '{"level":30,"msg":"Matricula is listening"}',
  ].join('\n');
  assert.equal(listeningPortIn(log), 40002);
  assert.equal(listeningPortIn(log, 'metrics'), 40001);
  assert.equal(listeningPortIn('{"msg":"starting"}'), undefined);
});

test(
  'underSchemaLock: a second file waits until the first has created, migrated or dropped',
  {
    skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL',
  },
  async () => {
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const firstIn = new Promise<void>((resolve) => (entered = resolve));
    const first = underSchemaLock(async (client) => {
      order.push('first in');
      entered();
      await held;
      await client.query('select 1');
      order.push('first out');
    });
    await firstIn;
    const second = underSchemaLock(async () => {
      order.push('second in');
    });
    // The second asks for the lock while the first holds it: several round trips later it still waits.
    const probe = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await probe.connect();
    for (let i = 0; i < 5; i++) await probe.query('select 1');
    await probe.end();
    assert.deepEqual(order, ['first in']);
    release();
    await Promise.all([first, second]);
    assert.deepEqual(order, ['first in', 'first out', 'second in']);
  },
);

test(
  'underSchemaLock: an index built concurrently elsewhere in the database does not wait for a file waiting for the lock',
  { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' },
  async () => {
    // The cycle CI met: a file holds the lock (until its migration, which waits for the build, is
    // done), a second file waits for it, and a build CONCURRENTLY waits for every older statement.
    const store = await createTestStore('postgres');
    const connect = async () => {
      const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await client.connect();
      return client;
    };
    const [holder, builder, watcher] = [await connect(), await connect(), await connect()];
    let waiting: Promise<string> | undefined;
    try {
      await builder.query(`create table ${store.schema}.probe (v int)`);
      await builder.query(`insert into ${store.schema}.probe select generate_series(1, 1000)`);
      await holder.query(`select pg_advisory_lock(hashtext('matricula test schemas'))`);
      waiting = underSchemaLock(async () => 'in');
      await waitUntil(
        async () =>
          (
            await watcher.query(
              `select 1 from pg_stat_activity where application_name = $1 and wait_event = 'advisory'`,
              [SCHEMA_LOCK_CONNECTION],
            )
          ).rowCount === 1,
        'the second file waiting for the lock',
      );
      // Bounded by the server: a build that waited for the waiter fails at the lock timeout.
      await builder.query(`set lock_timeout = '20s'`);
      await builder.query(`create index concurrently probe_v on ${store.schema}.probe (v)`).catch((err: unknown) => {
        throw new Error(`the build waited for the file waiting for the lock: ${String(err)}`);
      });
    } finally {
      await holder.end();
      assert.equal(await waiting, 'in', 'the waiting file got the lock once it was free');
      await Promise.all([builder.end(), watcher.end()]);
      await store.drop();
    }
  },
);

test(
  'migratingOnline: a migration that builds indexes concurrently leaves the schema lock free for other files',
  {
    skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL',
  },
  async () => {
    // Such a build waits for every older transaction, including another file's wait for the lock:
    // if the migrating file held it, neither would ever finish. Whether this process holds it is
    // read off pg_locks by its lock connection's name: other files, running beside this one, may
    // hold the lock themselves at any moment.
    const watcher = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await watcher.connect();
    try {
      const held = async () =>
        (
          await watcher.query(
            `select 1 from pg_locks l join pg_stat_activity a on a.pid = l.pid
             where a.application_name = $1 and l.locktype = 'advisory' and l.granted`,
            [SCHEMA_LOCK_CONNECTION],
          )
        ).rowCount === 1;
      assert.equal(await migratingOnline('t_probe', held), false, 'the schema lock is free while the migration runs');
      // The plain variant holds it: what the files that create, migrate and drop empty schemas use.
      assert.equal(await besideOtherFiles('t_probe', held), true);
    } finally {
      await watcher.end();
    }
  },
);

test(
  "analyzeOwnTables: the file's own tables, never another schema's",
  { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' },
  async () => {
    // A bare ANALYZE takes every table of the shared database in turn, and waits for whatever
    // another file holds on its own: here an open transaction's lock on the other schema's table.
    const [mine, other] = [await createTestStore('postgres'), await createTestStore('postgres')];
    const holder = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(`lock table ${other.schema}.sessions in access exclusive mode`);
      // Bounded by the server: an ANALYZE that waited for the other schema's lock fails at the lock timeout.
      await mine.store.db.connection().execute(async (connection) => {
        await sql`set lock_timeout = '10s'`.execute(connection);
        try {
          await analyzeOwnTables(connection).catch((err: unknown) => {
            throw new Error(`analyzeOwnTables waited for another schema: ${String(err)}`);
          });
        } finally {
          await sql`reset lock_timeout`.execute(connection);
        }
      });
      const { rows } = await holder.query<{ analyzed: boolean }>(
        `select last_analyze is not null as analyzed from pg_stat_user_tables where schemaname = $1 and relname = 'sessions'`,
        [mine.schema],
      );
      assert.deepEqual(rows, [{ analyzed: true }]);
    } finally {
      await holder.query('rollback');
      await holder.end();
      await Promise.all([mine.drop(), other.drop()]);
    }
  },
);

test('the compiled build is refused when it is missing or older than a file of src/', () => {
  const root = mkdtempSync(join(tmpdir(), 'matricula-build-current-'));
  try {
    mkdirSync(join(root, 'src', 'deep'), { recursive: true });
    writeFileSync(join(root, 'src', 'deep', 'x.ts'), '');
    assert.throws(() => assertBuildCurrent(root), /dist\/main\.js is missing: run npm run build/);
    mkdirSync(join(root, 'dist'));
    writeFileSync(join(root, 'dist', 'main.js'), '');
    const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));
    utimesSync(join(root, 'dist', 'main.js'), at(10), at(10));
    utimesSync(join(root, 'src', 'deep', 'x.ts'), at(5), at(5));
    assert.doesNotThrow(() => assertBuildCurrent(root));
    utimesSync(join(root, 'src', 'deep', 'x.ts'), at(11), at(11));
    assert.throws(() => assertBuildCurrent(root), /src\/deep\/x\.ts changed after dist\/ was built/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
