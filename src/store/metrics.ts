import type { Db } from './db.ts';

/** Session counts of one application, by outcome. */
export interface ApplicationMetrics {
  sessions: {
    total: number;
    pending: number;
    consented: number;
    verified: number;
    notVerified: number;
    expired: number;
    cancelled: number;
    declined: number;
  };
}

export async function applicationMetrics(_db: Db, _appId: string): Promise<ApplicationMetrics> {
  // Sessions are not stored yet (they arrive with the sessions migration): every count is zero.
  return { sessions: { total: 0, pending: 0, consented: 0, verified: 0, notVerified: 0, expired: 0, cancelled: 0, declined: 0 } };
}
