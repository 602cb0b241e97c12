import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { systemClock } from '../src/domain/clock.ts';
import { createServiceDeps } from '../src/services/deps.ts';
import { migrate, openStore } from '../src/store/db.ts';

/**
 * The OpenAPI document the app serves at /openapi.json, without a server: the app is built over a
 * throw-away SQLite file with a fixed test configuration, so the document does not depend on the
 * environment. `tsx scripts/openapi-document.ts OUT.json` writes it; without an argument, stdout.
 */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'matricula-openapi-'));
  const store = await openStore(`sqlite:${join(dir, 'openapi.sqlite')}`);
  try {
    await migrate(store);
    const config = loadConfig({ BASE_URL: 'https://matricula.example', LOG_LEVEL: 'silent' });
    const services = createServiceDeps({ db: store.db, clock: systemClock, config });
    const app = await buildApp({ store, services, logger: false });
    await app.ready();
    const document = app.swagger() as unknown as Record<string, unknown>;
    await app.close();
    return document;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const json = `${JSON.stringify(await openApiDocument(), null, 2)}\n`;
  const out = process.argv[2];
  if (out) writeFileSync(out, json);
  else process.stdout.write(json);
}
