import { buildApp, buildOperationsApp } from './app.ts';
import { ConfigError, type Config } from './config.ts';
import { systemClock } from './domain/clock.ts';
import { buildPeriodicJobs } from './jobs/schedule.ts';
import { createLogger, logStartupWarnings } from './logging.ts';
import { seedSandboxIssuers } from './services/trust-registry.ts';
import { createServiceDeps } from './services/deps.ts';
import { seedSandboxIdentityProvider } from './services/sso/sandbox-idp.ts';
import { openDatabaseWhenReachable } from './store/startup.ts';
import { DeliveryWorker } from './webhooks/worker.ts';

/**
 * The composition root, given a valid configuration (main.ts): openStore → migrate → buildApp →
 * listen; stops gracefully.
 */
export async function serve(config: Config): Promise<void> {
  const logger = createLogger(config);
  logStartupWarnings(logger, config);
  // A signal while waiting for the database ends the process at once; later, `stop` below.
  let onSignal = (signal: string): void => {
    logger.info({ signal }, 'stopping before start-up finished');
    process.exit(0);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const clock = systemClock;
  const store = await openDatabaseWhenReachable({
    url: config.databaseUrl,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    queryTimeoutMs: config.databaseQueryTimeoutMs,
    clock,
    log: logger,
  });
  await seedSandboxIssuers(store.db, clock);
  // Built once: the HTTP app, the periodic jobs and the delivery worker share these.
  const services = createServiceDeps({ db: store.db, clock, config, pool: store.pgPool });
  // The built-in sandbox identity provider (a university login to try), like the sandbox universities.
  await seedSandboxIdentityProvider(services);
  // The operator's OpenID4VP request certificate chain is validated now, not at the first request.
  if (
    config.role !== 'worker' &&
    config.openid4vp.clientIdPrefix !== 'redirect_uri' &&
    config.openid4vp.signingKeyPem !== undefined
  ) {
    try {
      const signer = await services.requestSigner();
      // HAIP wallets validate the request certificate to a trust anchor they hold: a self-signed one never.
      if (signer.selfSigned)
        logger.error(
          { setting: 'OPENID4VP_CERTIFICATE_CHAIN_FILE' },
          'the OpenID4VP request certificate is self-signed: HAIP wallets refuse requests signed with it; ' +
            'use a certificate issued under a trust anchor your wallets hold',
        );
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
  }
  const app = await buildApp({ store, services, logger });
  // METRICS_PORT: /metrics, /healthz and /readyz on a port of their own, in any role; the only
  // HTTP a worker process serves.
  const operations =
    config.metricsPort === undefined ? undefined : await buildOperationsApp({ store, services, logger });

  // Background jobs run in the worker role (and in `all`, the single-process default).
  const runsJobs = config.role !== 'api';
  const jobs = runsJobs ? buildPeriodicJobs({ services, clock, config, log: app.log }) : [];
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
  onSignal = (signal: string) => void stop(signal);

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
