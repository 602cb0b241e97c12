import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { TestClock, type Clock } from '../../src/domain/clock.ts';
import type { Principal } from '../../src/domain/principal.ts';
import { createServiceDeps, type ServiceDeps } from '../../src/services/deps.ts';
import { createOrganization } from '../../src/services/organizations.ts';
import { migrate, openStore, type Db, type Store } from '../../src/store/db.ts';
import { capabilitiesOf } from '../../src/store/dialect.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';

/**
 * The test harness: the real app over a real database. Every storage and API suite runs once per
 * dialect; PostgreSQL runs when TEST_DATABASE_URL is set (CI sets it, and sets
 * MATRICULA_REQUIRE_POSTGRES=1 so that a missing database fails instead of skipping).
 */
export type DialectName = 'sqlite' | 'postgres';

/**
 * Every connection this test process opens is named after it (`application_name`), so that the
 * watchdog's report (test/support/watchdog.ts) says whose each connection to the shared server is.
 * A URL that names its own keeps it.
 */
export const PROCESS_CONNECTIONS = `matricula-test-${process.pid}`;
/** The name of this process's connection that holds or waits for the schema lock ({@link underSchemaLock}). */
export const SCHEMA_LOCK_CONNECTION = `${PROCESS_CONNECTIONS}-schema-lock`;

function namedUrl(url: string, name: string, always = false): string {
  const parsed = new URL(url);
  if (always || !parsed.searchParams.has('application_name')) parsed.searchParams.set('application_name', name);
  return parsed.toString();
}

const PG_URL = process.env.TEST_DATABASE_URL && namedUrl(process.env.TEST_DATABASE_URL, PROCESS_CONNECTIONS);
const REQUIRE_PG = process.env.MATRICULA_REQUIRE_POSTGRES === '1';
if (REQUIRE_PG && !PG_URL) throw new Error('MATRICULA_REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set');

export const PG_SKIP_MESSAGE = 'PostgreSQL suite skipped: TEST_DATABASE_URL is not set';

/**
 * `describe` once per dialect; without a database the PostgreSQL one holds one skipped test, so
 * that the runner's summary counts it under "skipped" (a skipped suite is not counted), and the
 * TAP line still reads `… [postgres] # SKIP …` for CI's check.
 */
export function forEachDialect(name: string, body: (dialect: DialectName) => void): void {
  describe(`${name} [sqlite]`, () => body('sqlite'));
  if (PG_URL) describe(`${name} [postgres]`, () => body('postgres'));
  else describe(`${name} [postgres]`, () => test(`${name} [postgres]`, { skip: PG_SKIP_MESSAGE }, () => {}));
}

/** Connections of a test store's PostgreSQL pool (a test that reads every connection's state needs their number). */
export const TEST_POOL_SIZE = 5;

export interface TestStore {
  store: Store;
  /** The URL another process (CLI, worker) can open the same database with. */
  url: string;
  /** PostgreSQL schema, for opening a second store on the same database. */
  schema?: string;
  openAnother(): Promise<Store>;
  drop(): Promise<void>;
}

/** A fresh, migrated database: a temp SQLite file, or a PostgreSQL schema of its own. */
export async function createTestStore(dialect: DialectName): Promise<TestStore> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-test-'));
    const url = `sqlite:${join(dir, 'test.sqlite')}`;
    const store = await openStore(url);
    await migrate(store);
    return {
      store,
      url,
      openAnother: () => openStore(url),
      drop: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const store = await underSchemaLock(async () => {
    const opened = await openStore(PG_URL!, { schema, poolSize: TEST_POOL_SIZE });
    await retryingCatalogueRaces(schema, () => migrate(opened));
    return opened;
  });
  const url = `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return {
    store,
    url,
    schema,
    openAnother: () => openStore(PG_URL!, { schema, poolSize: TEST_POOL_SIZE }),
    drop: async () => {
      await store.close();
      await underSchemaLock(async (client) => {
        await client.query(`drop schema if exists ${schema} cascade`);
      });
    },
  };
}

/**
 * Renews the planner's statistics of the test's own tables: on PostgreSQL those of its schema
 * only. A bare `analyze` there takes every table of the shared database in turn, other files'
 * schemas (and whatever else the database holds) included, and waits for any lock on them.
 */
export async function analyzeOwnTables(db: Db): Promise<void> {
  if (capabilitiesOf(db).name !== 'postgres') {
    await sql`analyze`.execute(db);
    return;
  }
  const { rows } = await sql<{ name: string }>`
    select tablename as name from pg_tables where schemaname = current_schema() order by tablename`.execute(db);
  await sql`analyze ${sql.join(rows.map((row) => sql.table(row.name)))}`.execute(db);
}

/**
 * Runs `work` while holding a PostgreSQL advisory lock that every test file takes to create,
 * migrate or drop its schema: DDL of two files at once met in PostgreSQL's catalogue (deadlocks,
 * a schema dropped under another file's migrator, seen in CI). Migrating takes a fraction of a
 * second, so files wait little for each other. `work` gets the connection holding the lock.
 *
 * The lock is asked for in waits of at most {@link SCHEMA_LOCK_STEP}, each a new statement. A
 * CREATE INDEX CONCURRENTLY anywhere in the database (a file migrating tables that hold rows,
 * {@link migratingOnline}) waits for every statement older than it to end, a wait for this lock
 * included; one wait that lasted until the lock came free closed a cycle PostgreSQL cannot see,
 * since the holder frees the lock only when its migration on another connection is done, and
 * that migration waited for Kysely's migration lock, held by the concurrent build: every process
 * in it waits for ever (reproduced with four connections; looked for after two files hung side by
 * side in CI, which this does not fully explain: test/support/watchdog.ts reports the next one).
 */
export async function underSchemaLock<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: namedUrl(PG_URL!, SCHEMA_LOCK_CONNECTION, true) });
  await client.connect();
  try {
    await takeSchemaLock(client);
    return await work(client);
  } finally {
    await client.end();
  }
}

/** How long one wait for the schema lock lasts before it is asked for again (see {@link underSchemaLock}). */
const SCHEMA_LOCK_STEP = '1s';

async function takeSchemaLock(client: pg.Client): Promise<void> {
  await client.query(`set lock_timeout = '${SCHEMA_LOCK_STEP}'`);
  for (;;) {
    try {
      await client.query(`select pg_advisory_lock(hashtext('matricula test schemas'))`);
      break;
    } catch (err) {
      // 55P03 lock_not_available: this wait ended, ask again.
      if ((err as { code?: string }).code !== '55P03') throw err;
    }
  }
  // What `work` runs on this connection (a DROP SCHEMA) waits for its locks as long as it takes.
  await client.query('reset lock_timeout');
}

/**
 * Runs `migrating` (any migration of the schema `schema`) under the schema lock, again when it
 * failed only because of another test file: Kysely's migrator introspects the tables of every
 * schema, and a schema dropped at that moment (by a process that does not take the lock, such as
 * a CLI the test spawns) fails the catalogue query ('schema "t_…" does not exist', naming the other
 * file's schema); two files' DDL can also meet in the catalogue, and a deadlock's victim is rolled
 * back whole. Migrating is idempotent and locked, so those are retried; any other error is thrown.
 */
export async function besideOtherFiles<T>(schema: string, migrating: () => Promise<T>): Promise<T> {
  if (!schema) return migrating();
  return underSchemaLock(() => retryingCatalogueRaces(schema, migrating));
}

/**
 * Like {@link besideOtherFiles}, for a migration over tables that hold rows, which builds its
 * indexes CONCURRENTLY (store/online-index.ts): without the schema lock. Such a build waits for
 * every transaction of the database that began before it, including another file's statement
 * waiting for the schema lock; holding that lock meanwhile deadlocked the two (seen in CI: no
 * error, both waiting for ever). The catalogue races are retried as there.
 */
export async function migratingOnline<T>(schema: string, migrating: () => Promise<T>): Promise<T> {
  if (!schema) return migrating();
  return retryingCatalogueRaces(schema, migrating);
}

export async function retryingCatalogueRaces<T>(schema: string, migrating: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrating();
    } catch (err) {
      const other = /schema "(t_[0-9a-f]+)" does not exist/.exec(String(err));
      const deadlock =
        (err as { cause?: { code?: string } }).cause?.code === '40P01' || /deadlock detected/.test(String(err));
      // Before any migration runs, Kysely's Migrator lists the tables and columns of every schema
      // (pg_get_serial_sequence of each column): a column another file drops meanwhile fails that
      // read (seen in CI: test/store/schema-changes.test.ts dropping its upgrade_note). No migration
      // is named in that error, and none ran; a migration's own error names it and is not retried.
      const droppedElsewhere = /database migration {2}failed: column "[^"]+" of relation "[^"]+" does not exist/.test(
        String(err),
      );
      if (attempt === 5 || (!deadlock && !droppedElsewhere && (!other || other[1] === schema))) throw err;
    }
  }
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    BASE_URL: 'http://matricula.test',
    LOG_LEVEL: 'silent',
    OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true',
    BODY_LIMIT_BYTES: '65536',
    // Suites send hundreds of requests from one address within one minute of the test clock; the
    // limits are tested where a suite sets them (test/http/rate-limits.test.ts).
    RATE_LIMIT_PUBLIC_PER_MINUTE: '0',
    RATE_LIMIT_HEAVY_PER_MINUTE: '0',
    RATE_LIMIT_API_KEY_PER_MINUTE: '0',
    // Proofs run on the calling thread unless a suite asks for the pool (test/proofs/proof-pool.test.ts):
    // Node 20 can abort at a worker thread's teardown when tsx's loader hooks are registered in
    // it ("Check failed: node->IsInUse()" in ModuleWrap), which fails the file at exit.
    PROOF_WORKERS: '0',
    ...overrides,
  });
}

/** The principal of a new organization's bootstrap key (what authenticating with it yields). */
export function principalOf(created: Awaited<ReturnType<typeof createOrganization>>): Principal {
  return {
    orgId: created.organization.id,
    environment: created.application.environment,
    keyId: created.apiKey.id,
    appId: created.application.id,
  };
}

/** The app over `store`, with its service dependencies built once, as the composition root does. */
export async function buildTestApp(
  store: Store,
  clock: Clock,
  config: Config,
  logger: false | FastifyBaseLogger = false,
): Promise<{ app: FastifyInstance; services: ServiceDeps }> {
  const services = createServiceDeps({ db: store.db, clock, config, pool: store.pgPool });
  return { app: await buildApp({ store, services, logger }), services };
}

export interface Harness {
  app: FastifyInstance;
  /** The app's service dependencies: its unit of work, its wake-ups (a worker subscribes there). */
  services: ServiceDeps;
  store: Store;
  testStore: TestStore;
  clock: TestClock;
  config: Config;
  /** A new organization with an application and key in `environment`. */
  bootstrap(environment?: 'sandbox' | 'live'): Promise<Tenant>;
  /** Another app instance over the same database (a second process, as far as state goes). */
  secondInstance(): Promise<FastifyInstance>;
  close(): Promise<void>;
}

export interface Tenant {
  orgId: string;
  appId: string;
  keyId: string;
  secret: string;
  auth: { authorization: string };
}

export async function startHarness(
  dialect: DialectName,
  configOverrides: Record<string, string> = {},
  options: { logger?: FastifyBaseLogger } = {},
): Promise<Harness> {
  const testStore = await createTestStore(dialect);
  const clock = new TestClock();
  await seedSandboxIssuers(testStore.store.db, clock);
  const config = testConfig(configOverrides);
  const { app, services } = await buildTestApp(testStore.store, clock, config, options.logger);
  const extra: Array<{ app: FastifyInstance; store: Store }> = [];
  return {
    app,
    services,
    store: testStore.store,
    testStore,
    clock,
    config,
    async bootstrap(environment = 'sandbox') {
      const created = await createOrganization(
        { db: testStore.store.db, clock },
        { name: `Org ${randomBytes(3).toString('hex')}`, environment },
      );
      return {
        orgId: created.organization.id,
        appId: created.application.id,
        keyId: created.apiKey.id,
        secret: created.apiKey.rawSecret,
        auth: { authorization: `Bearer ${created.apiKey.rawSecret}` },
      };
    },
    async secondInstance() {
      const store = await testStore.openAnother();
      const { app: second } = await buildTestApp(store, clock, config);
      extra.push({ app: second, store });
      return second;
    },
    async close() {
      for (const e of extra) {
        await e.app.close();
        await e.store.close();
      }
      await app.close();
      await testStore.drop();
    },
  };
}

/**
 * Starts a harness with one sandbox tenant before the enclosing suite's tests, hands both to
 * `ready`, and closes the harness after them. The suite keeps them in its own variables:
 * `useHarness(dialect, (...suite) => ([h, tenant] = suite), configOverrides)`.
 */
export function useHarness(
  dialect: DialectName,
  ready: (h: Harness, tenant: Tenant) => void,
  configOverrides: Record<string, string> = {},
): void {
  let harness: Harness | undefined;
  before(async () => {
    harness = await startHarness(dialect, configOverrides);
    ready(harness, await harness.bootstrap('sandbox'));
  });
  after(() => harness?.close());
}
