/**
 * Webhook delivery: sustained deliveries per second to a local receiver, and the time from the
 * commit of an event to its receipt (p50, p99), on SQLite and PostgreSQL.
 *
 *   node --import tsx bench/webhooks.ts [--events 3000] [--producers 4] [--rate 100] [--paced 1000] [--database sqlite,postgres]
 *
 * Two phases per database, each with the real outbox (recordEvent in a transaction), the real
 * delivery worker in this process (woken on commit, as in `npm start`), signing, and undici to a
 * bare node:http receiver on loopback that parses the body and answers 200:
 *
 * - burst: `--events` events committed as fast as `--producers` concurrent writers can, the
 *   worker delivering meanwhile: deliveries/s from the first commit to the last receipt (the
 *   sustained rate), and commit→receipt latency under that saturation (mostly queueing);
 * - paced: `--paced` events at `--rate` per second, well under saturation: commit→receipt
 *   latency of one event when the system is not backlogged.
 *
 * PostgreSQL uses BENCH_DATABASE_URL or TEST_DATABASE_URL (a schema of its own, dropped after);
 * without either it is skipped. Figures are printed, never asserted.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { systemClock } from '../src/domain/clock.ts';
import { recordEvent } from '../src/services/events.ts';
import { createOrganization } from '../src/services/organizations.ts';
import { insertNewEndpoint } from '../src/services/webhooks.ts';
import { migrate, openStore, type Store } from '../src/store/db.ts';
import { DeliveryWorker } from '../src/webhooks/worker.ts';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '3000' },
    producers: { type: 'string', default: '4' },
    rate: { type: 'string', default: '100' },
    paced: { type: 'string', default: '1000' },
    database: { type: 'string', default: 'sqlite,postgres' },
  },
});
const EVENTS = Number(values.events);
const PRODUCERS = Number(values.producers);
const RATE = Number(values.rate);
const PACED = Number(values.paced);
const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'silent' });

interface BenchStore {
  store: Store;
  drop(): Promise<void>;
}

async function openBenchStore(dialect: 'sqlite' | 'postgres'): Promise<BenchStore> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-bench-'));
    const store = await openStore(`sqlite:${join(dir, 'bench.sqlite')}`);
    await migrate(store);
    return {
      store,
      drop: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const store = await openStore(PG_URL!, { schema, poolSize: 10 });
  await migrate(store);
  return {
    store,
    drop: async () => {
      await store.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
    },
  };
}

/** A bare receiver: reads the body, notes when each event id arrived, answers 200. */
async function startReceiver(onEvent: (eventId: string, at: number) => void) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      onEvent(JSON.parse(Buffer.concat(chunks).toString()).id, performance.now());
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

interface Phase {
  deliveriesPerSecond: number;
  p50: number;
  p99: number;
  count: number;
}

async function run(dialect: 'sqlite' | 'postgres'): Promise<{ burst: Phase; paced: Phase }> {
  const bench = await openBenchStore(dialect);
  const { store } = bench;
  // Receipt and commit times by event id. A receipt can come before the producer resumes after its
  // commit (a NOTIFY wakes the worker at the commit itself), so latencies are computed at the end.
  const committedAt = new Map<string, number>();
  const receivedAt = new Map<string, number>();
  let waiting: { count: number; resolve: () => void } | undefined;
  const receiver = await startReceiver((eventId, at) => {
    if (receivedAt.has(eventId)) return; // a duplicate: the first receipt counts
    receivedAt.set(eventId, at);
    if (waiting && receivedAt.size >= waiting.count) waiting.resolve();
  });
  const allReceived = (count: number) => {
    const all = new Promise<void>((resolve) => (receivedAt.size >= count ? resolve() : (waiting = { count, resolve })));
    let timer: NodeJS.Timeout;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${dialect}: ${receivedAt.size} of ${count} deliveries after 5 minutes`)),
        300_000,
      );
    });
    return Promise.race([all, deadline]).finally(() => clearTimeout(timer));
  };

  const org = await createOrganization({ db: store.db, clock: systemClock }, { name: 'Bench', environment: 'sandbox' });
  const app = org.application;
  await store.db
    .transaction()
    .execute((trx) =>
      insertNewEndpoint(trx, { clock: systemClock }, app, { url: receiver.url, events: ['verification.completed'] }),
    );
  const worker = new DeliveryWorker({ store, clock: systemClock, config });
  await worker.start();
  const source = { appId: app.id, orgId: org.organization.id, environment: 'sandbox' as const };
  const data = {
    verified: true,
    university: { name: 'Sandbox State University', domain: 'sandbox-state.example', country: 'US' },
    claims: { is_active_student: true, academic_level: 'undergraduate', valid_until: '2027-09-30T00:00:00.000Z' },
  };
  const emit = async (i: number) => {
    const event = await store.db
      .transaction()
      .execute((trx) =>
        recordEvent(trx, systemClock, source, 'verification.completed', { sessionId: `sess_bench${i}`, ...data }),
      );
    committedAt.set(event.id, performance.now());
    worker.wake();
  };

  const phase = async (count: number, produce: () => Promise<void>): Promise<Phase> => {
    committedAt.clear();
    receivedAt.clear();
    const started = performance.now();
    const done = allReceived(count);
    await produce();
    await done;
    const latencies = [...receivedAt].map(([id, at]) => at - committedAt.get(id)!).sort((a, b) => a - b);
    const lastReceipt = Math.max(...receivedAt.values());
    return {
      deliveriesPerSecond: count / ((lastReceipt - started) / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      count,
    };
  };

  // Warm-up: connections, JIT, prepared paths.
  await phase(50, async () => {
    for (let i = 0; i < 50; i++) await emit(i);
  });

  let next = 0;
  const burst = await phase(EVENTS, () =>
    Promise.all(
      Array.from({ length: PRODUCERS }, async () => {
        while (next < EVENTS) await emit(next++);
      }),
    ).then(() => undefined),
  );
  const paced = await phase(PACED, async () => {
    const start = performance.now();
    const emitted: Promise<void>[] = [];
    for (let i = 0; i < PACED; i++) {
      const wait = start + (i * 1000) / RATE - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      emitted.push(emit(EVENTS + i));
    }
    await Promise.all(emitted);
  });

  await worker.stop();
  await receiver.close();
  await bench.drop();
  return { burst, paced };
}

async function main(): Promise<void> {
  const dialects = values.database.split(',').map((d) => d.trim()) as Array<'sqlite' | 'postgres'>;
  console.log(
    `webhook delivery, ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(`burst: ${EVENTS} events from ${PRODUCERS} producers; paced: ${PACED} events at ${RATE}/s\n`);
  console.log('| database | sustained deliveries/s | burst p50 ms | burst p99 ms | paced p50 ms | paced p99 ms |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const dialect of dialects) {
    if (dialect === 'postgres' && !PG_URL) {
      console.log('| postgres | skipped: set BENCH_DATABASE_URL or TEST_DATABASE_URL | | | | |');
      continue;
    }
    const { burst, paced } = await run(dialect);
    const f = (n: number) => n.toFixed(1);
    console.log(
      `| ${dialect} | ${burst.deliveriesPerSecond.toFixed(0)} | ${f(burst.p50)} | ${f(burst.p99)} | ${f(paced.p50)} | ${f(paced.p99)} |`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
