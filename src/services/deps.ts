import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import type { TrustRegistry } from '../proofs/types.ts';
import type { Db } from '../store/db.ts';

/** What every use case needs, passed in and assembled once by the composition root. */
export interface ServiceDeps {
  db: Db;
  clock: Clock;
  config: Config;
  trustRegistry: TrustRegistry;
  /** Called after a transaction that recorded events commits: wakes the in-process delivery worker. */
  onEventsCommitted: () => void;
}
