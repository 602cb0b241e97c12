import { principalScope, walletScope } from '../domain/idempotency.ts';
import type { Principal } from '../domain/principal.ts';
import { canRedact, redactedDocument, redactedEventData, redactedResult } from '../domain/redaction.ts';
import { effectiveStatus } from '../domain/session-state.ts';
import type { Session } from '../domain/session.ts';
import { invalidState } from '../errors.ts';
import { duringBatches } from '../store/db.ts';
import { afterRedactionBatch, afterRetentionSweep, REDACTION_TABLES } from '../store/erasure.ts';
import { redactSessionEvents } from '../store/events.ts';
import { redactStoredResponses } from '../store/idempotency.ts';
import { deleteHeldResult } from '../store/openid4vp-held-results.ts';
import { dueForRetention, findSession, redactSessionRow } from '../store/sessions.ts';
import { clearAttemptBodiesBefore, clearSessionAttemptBodies } from '../store/webhook-deliveries/retention.ts';
import { pacedSteps, purgeInBatches, type BatchOptions, type Pacing } from './batches.ts';
import type { ServiceDeps } from './deps.ts';
import { sessionForCaller } from './sessions.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const CLOCK_MARGIN_MS = 60_000;

/**
 * Erases a session's data everywhere it is stored, in one transaction with its
 * `verification.redacted` event: the session row (metadata, clientReference, the result's claims,
 * university and failureMessage), the events about it, the response bodies of the attempts to
 * deliver them, and the responses kept for idempotent replays that show it.
 * @returns false when there was nothing to do: already redacted (by this call's rival, too), or
 *   not ended yet.
 */
async function redact(deps: ServiceDeps, session: Session, at: string): Promise<boolean> {
  return deps.unitOfWork(async (work) => {
    const result = session.result === null ? null : redactedResult(session.result);
    if (!(await redactSessionRow(work.db, session.id, { at, result }))) return false;
    await redactSessionEvents(work.db, session.id, redactedEventData);
    await clearSessionAttemptBodies(work.db, session.id);
    // A same-device OpenID4VP answer still waiting for its redirect holds claims too.
    await deleteHeldResult(work.db, session.id);
    await redactStoredResponses(
      work.db,
      {
        scopes: [principalScope(session.orgId, session.environment), walletScope(session.id, session.challengeNonce)],
        // Only answers given while the session was open show its data (a cancel, a wallet's
        // outcome); a redact answer is redacted already. The margin covers other processes' clocks.
        since: new Date(Date.parse(session.createdAt) - CLOCK_MARGIN_MS).toISOString(),
        until: new Date(Date.parse(session.expiresAt) + CLOCK_MARGIN_MS).toISOString(),
        needle: session.id,
      },
      (body) => redactedDocument(body, session.id),
    );
    await work.record(session, 'verification.redacted', { sessionId: session.id, redactedAt: at });
    return true;
  });
}

/**
 * `POST /verification/v1/sessions/{id}/redact`: a session of the caller's that has ended is
 * redacted once; asking again returns it as it is (no second event). An open session is a 409:
 * it could still learn what would be erased.
 */
export async function redactSessionForCaller(deps: ServiceDeps, principal: Principal, id: string): Promise<Session> {
  const session = await sessionForCaller(deps, principal, id);
  if (session.redactedAt !== null) return session;
  const now = deps.clock.now();
  if (!canRedact(session.status, session.expiresAt, now)) {
    const status = effectiveStatus(session.status, session.expiresAt, now);
    throw invalidState(`Cannot redact a ${status} session: cancel it first, or wait until it ends.`);
  }
  if (await redact(deps, session, now.toISOString())) {
    deps.metrics.sessionRedacted({ trigger: 'request' });
    await afterRedactionBatch(deps.db);
  }
  return (await findSession(deps.db, session.id))!;
}

export interface RetentionOutcome {
  /** Sessions redacted by this run. */
  sessions: number;
  /** Webhook attempts whose stored response body was dropped. */
  attemptBodies: number;
}

/**
 * Result retention (`RESULT_RETENTION_DAYS`): redacts, each with its `verification.redacted`
 * event, the sessions that ended more than that many days ago, and drops the stored response
 * bodies of webhook attempts older than the same window. A session ends at `expiresAt` at the
 * latest, so its data is kept at least the window after it ended, and at most its lifetime (15
 * minutes) longer. At most `maxBatches` batches per run; the next run carries on. Each session's
 * redaction is a transaction of its own, paced as a batch of a purge is (services/batches.ts): the
 * service pauses after each for nine times as long as it took. Unpaced, a run's redactions took a
 * quarter of its time, and the API's p99 during runs with due work read 2.1–2.5 times its idle p99
 * at 1M sessions (bench/scale.ts). Attempt bodies are emptied in paced batches too
 * (`attemptBodies`). Any number of processes may run it: a session another one redacted first is
 * skipped. After each batch that redacted a session, and after dropping attempt bodies, the erased
 * values' older copies are removed from the database's files as far as the dialect allows; a run that rewrote rows ends with a VACUUM of the tables it
 * rewrote on PostgreSQL (store/erasure.ts). A run that rewrote nothing costs no checkpoint and no
 * VACUUM.
 */
export async function applyResultRetention(
  deps: ServiceDeps,
  options: BatchOptions & { attemptBodies?: BatchOptions; pacing?: Pacing } = {},
): Promise<RetentionOutcome> {
  const now = deps.clock.now();
  const cutoff = new Date(now.getTime() - deps.config.resultRetentionDays * DAY_MS).toISOString();
  const outcome = await duringBatches(deps.db, async (): Promise<RetentionOutcome> => {
    const sessions = await redactDue(deps, cutoff, now.toISOString(), options);
    const attemptBodies = await purgeInBatches(
      async (limit) => {
        const cleared = await clearAttemptBodiesBefore(deps.db, cutoff, limit);
        if (cleared > 0) await afterRedactionBatch(deps.db);
        return cleared;
      },
      { signal: options.signal, ...options.attemptBodies, db: deps.db, pacing: options.pacing },
    );
    return { sessions, attemptBodies };
  });
  await afterRetentionSweep(
    deps.db,
    outcome.sessions > 0 ? REDACTION_TABLES : outcome.attemptBodies > 0 ? ['webhook_attempts'] : [],
  );
  return outcome;
}

/** Result retention's redactions: sessions that ended before `cutoff`, each paced as a batch. */
async function redactDue(
  deps: ServiceDeps,
  cutoff: string,
  at: string,
  options: BatchOptions & { pacing?: Pacing },
): Promise<number> {
  const batchSize = options.batchSize ?? 100;
  const maxBatches = options.maxBatches ?? 10;
  const redactions = pacedSteps(options);
  let total = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const due = await dueForRetention(deps.db, cutoff, batchSize);
    let redacted = 0;
    for (const session of due) {
      const done = await redactions.step(() => redact(deps, session, at));
      if (done === undefined) break;
      if (!done) continue;
      redacted++;
      deps.metrics.sessionRedacted({ trigger: 'retention' });
    }
    if (redacted > 0) await afterRedactionBatch(deps.db);
    total += redacted;
    if (due.length < batchSize || options.signal?.aborted) break;
  }
  return total;
}
