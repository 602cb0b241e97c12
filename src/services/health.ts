import { probeWrite } from '../store/health-probe.ts';
import type { ServiceDeps } from './deps.ts';

/**
 * Readiness: the database takes a write and commits it (one row rewritten). A read alone would
 * call a database with a full disk, or a read-only standby, ready. Throws what the driver throws.
 */
export async function checkDatabase(deps: Pick<ServiceDeps, 'db' | 'clock'>): Promise<void> {
  await probeWrite(deps.db, deps.clock.now());
}
