import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import { createVerifiers, type Verifiers } from '../proofs/formats.ts';
import { databaseTrustRegistry } from '../proofs/trust-registry.ts';
import type { TrustRegistry } from '../proofs/types.ts';
import type { Db } from '../store/db.ts';

/** What every use case needs, passed in and assembled once by the composition root. */
export interface ServiceDeps {
  db: Db;
  clock: Clock;
  config: Config;
  trustRegistry: TrustRegistry;
  /** The verifier of every accepted format, with the keys the configuration names. */
  verifiers: Verifiers;
  /** Called after a transaction that recorded events commits: wakes the in-process delivery worker. */
  onEventsCommitted: () => void;
}

export function createServiceDeps(input: {
  db: Db;
  clock: Clock;
  config: Config;
  onEventsCommitted?: () => void;
}): ServiceDeps {
  return {
    db: input.db,
    clock: input.clock,
    config: input.config,
    trustRegistry: databaseTrustRegistry(input.db),
    verifiers: createVerifiers({ groth16LiveVerificationKeyPath: input.config.groth16LiveVerificationKey }),
    onEventsCommitted: input.onEventsCommitted ?? (() => {}),
  };
}
