import { buildApp, buildOperationsApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { systemClock } from './domain/clock.ts';
import { PeriodicJob } from './jobs/periodic.ts';
import { createLogger, logStartupWarnings } from './logging.ts';
import { parseServerArgs, SERVER_USAGE, ServerArgsError, serverVersion } from './server-args.ts';
import { seedSandboxIssuers } from './services/trust-registry.ts';
import { createServiceDeps } from './services/deps.ts';
import { expireDueSessions } from './services/expiry.ts';
import { purgeExpiredIdempotencyKeys } from './services/idempotency-purge.ts';
import { purgeExpiredSpentNonces } from './services/direct-verify.ts';
import { applyResultRetention } from './services/redaction.ts';
import { migrate, openStore } from './store/db.ts';
import { DeliveryWorker } from './webhooks/worker.ts';

/** Composition root: loadConfig → openStore → migrate → buildApp → listen; stops gracefully. */
async function main(): Promise<void> {
  let config: Config;
  try {
    const argv = process.argv.slice(2);
    // --help and --version answer and exit before any configuration is read or port opened.
    const args = parseServerArgs(argv);
    if (args.action !== 'run') {
      process.stdout.write(`${args.action === 'help' ? SERVER_USAGE : serverVersion()}\n`);
      return;
    }
    config = loadConfig(process.env, argv);
  } catch (err) {
    if (err instanceof ServerArgsError) {
      process.stderr.write(`Error: ${err.message}\n\n${SERVER_USAGE}\n`);
      process.exit(2);
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }

  const logger = createLogger(config);
  logStartupWarnings(logger, config);
  const store = await openStore(config.databaseUrl);
  await migrate(store);
  const clock = systemClock;
  await seedSandboxIssuers(store.db, clock);
  // Built once: the HTTP app, the periodic jobs and the delivery worker share these.
  const services = createServiceDeps({ db: store.db, clock, config, pool: store.pgPool });
  const app = await buildApp({ store, services, logger });
  // METRICS_PORT: /metrics, /healthz and /readyz on a port of their own, in any role; the only
  // HTTP a worker process serves.
  const operations =
    config.metricsPort === undefined ? undefined : await buildOperationsApp({ store, services, logger });

  // Background jobs run in the worker role (and in `all`, the single-process default).
  const runsJobs = config.role !== 'api';
  const onJobError = (job: string) => (err: unknown) => app.log.error({ err, job }, 'background job failed');
  const jobs = runsJobs
    ? [
        new PeriodicJob(
          'session-expiry',
          () => expireDueSessions(services),
          5_000,
          onJobError('session-expiry'),
          clock,
        ),
        // Rows that only keep a table from growing: idempotent responses past 24 h, and nonces
        // spent by direct verify past their expiry (whose presentations are stale by then).
        new PeriodicJob(
          'expired-rows-purge',
          async () => ({
            idempotencyKeys: await purgeExpiredIdempotencyKeys(services),
            spentNonces: await purgeExpiredSpentNonces(services),
          }),
          10 * 60_000,
          onJobError('expired-rows-purge'),
          clock,
        ),
        // RESULT_RETENTION_DAYS: sessions ended longer ago are redacted, old attempt bodies dropped.
        new PeriodicJob(
          'result-retention',
          () => applyResultRetention(services),
          60_000,
          onJobError('result-retention'),
          clock,
        ),
      ]
    : [];
  // API processes only write the outbox; the worker role and `all` deliver webhooks. A commit in
  // this process wakes the worker through services.wakeups, other processes' through NOTIFY.
  const worker = runsJobs
    ? new DeliveryWorker({ store, clock, config, wakeups: services.wakeups, log: app.log, metrics: services.metrics })
    : undefined;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping');
    await app.close();
    await operations?.close();
    await Promise.all(jobs.map((job) => job.stop()));
    await worker?.stop();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  for (const job of jobs) job.start();
  await worker?.start();
  const database = config.databaseUrl.replace(/\/\/[^@/]*@/, '//***@');
  if (operations) {
    await operations.listen({ port: config.metricsPort, host: config.host });
    const { port } = operations.server.address() as { port: number };
    app.log.info({ metricsPort: port }, `Metrics, /healthz and /readyz on port ${port}`);
  }
  if (config.role === 'worker') {
    app.log.info({ database, role: config.role, jobs: jobs.map((j) => j.name) }, 'Matricula worker is running');
    return;
  }
  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    { baseUrl: config.baseUrl, database, role: config.role, jobs: jobs.map((j) => j.name) },
    'Matricula is listening',
  );
}

main().catch((err) => {
  process.stderr.write(`Matricula failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
