import { sql } from 'kysely';
import type { Db } from '../db.ts';
import { prepareQuery } from '../prepared.ts';
import {
  CLAIM_COLUMNS,
  claimedDeliveries,
  claimStrategyOf,
  claimUpdate,
  claimValuesOf,
  lockedQuery,
  type ClaimedDelivery,
  type ClaimRequest,
  type ClaimRow,
  type ClaimValues,
} from './claim.ts';
import {
  checkRecordedMoves,
  recordAttempts,
  recordingValuesOf,
  withRecording,
  type PendingRecord,
  type RecordingValues,
} from './recording.ts';

/**
 * How a running worker claims again as its sends finish, by name (the worker picks its flow by
 * it, webhooks/worker.ts):
 * - `claim-with-recording` (PostgreSQL): the claim of the next batch rides in the statement that
 *   records the last one ({@link recordAttemptsAndClaim}), planned with the slots that recording
 *   frees counted as free: one round trip where a recording and a claim took two.
 * - `claim-after-recording` (SQLite): the recording's transaction, then the loop's own claim. A
 *   write takes no round trip there, so riding together gains nothing.
 */
export type RefillStrategy = 'claim-with-recording' | 'claim-after-recording';

/** The refill strategy of a dialect: a claim rides in a recording where both are one statement. */
export function refillStrategyOf(db: Db): RefillStrategy {
  return claimStrategyOf(db) === 'update-returning-join' ? 'claim-with-recording' : 'claim-after-recording';
}

type RecordAndClaimValues = ClaimValues & RecordingValues;

/**
 * The recording's WITH (recording.ts withRecording), then the claim of claim.ts's
 * update-returning-join strategy as one more part, and the outer query: a row per delivery
 * recorded (its id) and a row per delivery claimed (what sending it needs), side by side in one
 * result by a FULL JOIN ON false (the ids as one array on every claimed row were parsed once per
 * row: the largest cost of our own in a drain's CPU profile). Every part sees the database as the
 * statement began: the claim leaves out the deliveries being recorded (a row may not be changed
 * twice in one statement, and one whose lease ran out while it was being sent would look
 * claimable), and the caller gives the endpoints a 410 disables in it no allowance. Its text is
 * the same for every batch: a named prepared statement, as the claim is.
 */
const recordAndClaimStatement = prepareQuery('record_and_claim_deliveries', (db: Db, p: RecordAndClaimValues) =>
  withRecording(db, p)
    .with('claimed', () =>
      claimUpdate(
        db,
        p,
        lockedQuery(db, p).where(sql<boolean>`not (id = any(array(select x.id from input as x)))`),
      ).returning(['id', 'attempt_count', 'lease_token', 'endpoint_id', 'event_id']),
    )
    .selectFrom('logged as l')
    .fullJoin(
      (q) =>
        q
          .selectFrom('claimed as d')
          .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
          .innerJoin('events as ev', 'ev.id', 'd.event_id')
          .select(CLAIM_COLUMNS)
          .as('c'),
      (join) => join.on(sql<boolean>`false`),
    )
    .select('l.delivery_id as recorded')
    .selectAll('c'),
);

/**
 * Records a batch of finished attempts (as recording.ts recordAttempts does: each only by its
 * lease holder) and makes the claim `claim` in the same statement (PostgreSQL, the
 * claim-with-recording strategy): one round trip, atomic as one statement is. The recording and
 * the claim are made at `claim.now`. An endpoint a 410 in the batch disables gets nothing.
 * @returns the ids of the deliveries recorded, and the deliveries claimed.
 */
export async function recordAttemptsAndClaim(
  db: Db,
  records: PendingRecord[],
  claim: ClaimRequest,
): Promise<{ recorded: Set<string>; claimed: ClaimedDelivery[] }> {
  if (refillStrategyOf(db) !== 'claim-with-recording')
    throw new Error('a claim rides in a recording only where both are one statement (PostgreSQL)');
  checkRecordedMoves(records);
  const gone = records.flatMap((r) => (r.record.disableEndpoint ? [r.record.disableEndpoint.endpointId] : []));
  const values = claimValuesOf({
    ...claim,
    allowances: new Map([...(claim.allowances ?? []), ...gone.map((id) => [id, 0] as const)]),
  });
  if (records.length === 0 || values.heads === 0)
    return { recorded: await recordAttempts(db, records, claim.now), claimed: [] };
  const { rows } = await recordAndClaimStatement.execute(db, { ...values, ...recordingValuesOf(records, claim.now) });
  const recorded = new Set<string>();
  const claimedRows: ClaimRow[] = [];
  for (const row of rows) {
    if (row.recorded !== null) recorded.add(row.recorded);
    else if (row.id !== null) claimedRows.push(row as ClaimRow);
  }
  return { recorded, claimed: claimedDeliveries(claimedRows, claim.token) };
}
