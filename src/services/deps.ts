import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import type { TrustRegistry } from '../domain/credentials.ts';
import { createVerifiers, type Verifiers } from '../proofs/formats.ts';
import type { Db } from '../store/db.ts';
import { DeliveryWakeups } from '../webhooks/wake.ts';
import { PrometheusMetrics, type PoolStats } from './metrics.ts';
import { databaseTrustRegistry } from './trust-registry.ts';
import { createUnitOfWork, type UnitOfWork } from './unit-of-work.ts';

/** What every use case needs, assembled once by the composition root and passed to every part. */
export interface ServiceDeps {
  db: Db;
  clock: Clock;
  config: Config;
  trustRegistry: TrustRegistry;
  /** The verifier of every accepted format, with the keys the configuration names. */
  verifiers: Verifiers;
  /** Runs a state change, its events and the wake-up of the workers (services/unit-of-work.ts). */
  unitOfWork: UnitOfWork;
  /** This process's delivery workers subscribe here; only the unit of work notifies. */
  wakeups: DeliveryWakeups;
  /** This instance's Prometheus metrics (GET /metrics); use cases and the worker record through it. */
  metrics: PrometheusMetrics;
}

export function createServiceDeps(input: {
  db: Db;
  clock: Clock;
  config: Config;
  /** The PostgreSQL pool (Store.pgPool), whose use the metrics report. */
  pool?: PoolStats;
}): ServiceDeps {
  const wakeups = new DeliveryWakeups();
  return {
    db: input.db,
    clock: input.clock,
    config: input.config,
    trustRegistry: databaseTrustRegistry(input.db),
    verifiers: createVerifiers({ groth16LiveVerificationKeyPath: input.config.groth16LiveVerificationKey }),
    unitOfWork: createUnitOfWork({ db: input.db, clock: input.clock, wakeups }),
    wakeups,
    metrics: new PrometheusMetrics({ db: input.db, clock: input.clock, pool: input.pool }),
  };
}
