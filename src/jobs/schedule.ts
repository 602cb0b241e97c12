import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { purgeExpiredSpentNonces } from '../services/direct-verify.ts';
import { applyEventRetention } from '../services/event-retention.ts';
import { expireDueSessions } from '../services/expiry.ts';
import { purgeExpiredIdempotencyKeys } from '../services/idempotency.ts';
import { purgeExpiredDashboardSignIns } from '../services/members.ts';
import { purgeExpiredLoginRows } from '../services/sso/complete.ts';
import { refreshDueFederations } from '../services/sso/federation.ts';
import { refreshStatistics } from '../services/planner-statistics.ts';
import { applyResultRetention } from '../services/redaction.ts';
import { PeriodicJob } from './periodic.ts';

/** Where a failed step is reported; the job retries at its next tick either way. */
export interface JobLog {
  error(fields: { err: unknown; job: string }, message: string): void;
}

/**
 * The service's periodic jobs, each with its own schedule (JOB_*_SECONDS, config.jobs), not yet
 * started. The composition root starts them in the worker role (and in `all`); a test steps them
 * with `runOnce()` or moves the TestClock.
 */
export function buildPeriodicJobs(input: {
  services: ServiceDeps;
  clock: Clock;
  config: Pick<Config, 'jobs'>;
  log: JobLog;
}): PeriodicJob[] {
  const { services, clock, log } = input;
  const intervals = input.config.jobs;
  const job = (name: string, step: (signal: AbortSignal) => Promise<unknown>, seconds: number) =>
    new PeriodicJob(name, step, seconds * 1000, (err) => log.error({ err, job: name }, 'background job failed'), clock);
  return [
    job('session-expiry', (signal) => expireDueSessions(services, { signal }), intervals.sessionExpirySeconds),
    // Rows that only keep a table from growing: idempotent responses past 24 h, and nonces spent
    // by direct verify past their expiry (whose presentations are stale by then). First the
    // planner's statistics of tables whose size changed tenfold, so that the purges are planned
    // from the tables as they are now (services/planner-statistics.ts).
    job(
      'expired-rows-purge',
      async (signal) => {
        await refreshStatistics(services);
        return {
          idempotencyKeys: await purgeExpiredIdempotencyKeys(services, { signal }),
          spentNonces: await purgeExpiredSpentNonces(services, { signal }),
          dashboardSignIns: await purgeExpiredDashboardSignIns(services),
          loginRequests: await purgeExpiredLoginRows(services),
        };
      },
      intervals.expiredRowsPurgeSeconds,
    ),
    // RESULT_RETENTION_DAYS: sessions ended longer ago are redacted, old attempt bodies dropped.
    job('result-retention', (signal) => applyResultRetention(services, { signal }), intervals.resultRetentionSeconds),
    // EVENT_RETENTION_DAYS: older events go, with their deliveries and attempts.
    job('event-retention', (signal) => applyEventRetention(services, { signal }), intervals.eventRetentionSeconds),
    // Federation aggregates due per their cacheDuration (or FEDERATION_REFRESH_MAX_SECONDS), and
    // those past validUntil whose entries must be withdrawn.
    job('federation-refresh', () => refreshDueFederations(services), intervals.federationRefreshSeconds),
  ];
}
