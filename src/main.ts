import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { systemClock } from './domain/clock.ts';
import { seedSandboxIssuers } from './proofs/trust-registry.ts';
import { migrate, openStore } from './store/db.ts';

/** Composition root: loadConfig → openStore → migrate → buildApp → listen; stops gracefully. */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env, process.argv.slice(2));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }

  const store = await openStore(config.databaseUrl);
  await migrate(store);
  const clock = systemClock;
  await seedSandboxIssuers(store.db, clock);
  const app = await buildApp({ store, clock, config });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping');
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  app.log.info({ baseUrl: config.baseUrl, database: config.databaseUrl.replace(/\/\/[^@/]*@/, '//***@'), role: config.role }, 'Matricula is listening');
}

main().catch((err) => {
  process.stderr.write(`Matricula failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
