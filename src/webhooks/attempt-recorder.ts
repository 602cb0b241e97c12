import type { Clock } from '../domain/clock.ts';
import type { Db } from '../store/db.ts';
import type { ClaimedDelivery, ClaimRequest } from '../store/webhook-deliveries/claim.ts';
import { recordAttemptsAndClaim } from '../store/webhook-deliveries/record-and-claim.ts';
import { recordAttempts, type PendingRecord } from '../store/webhook-deliveries/recording.ts';

/** At most this many attempts in one recording transaction. */
export const MAX_RECORD_BATCH = 256;

interface Queued {
  item: PendingRecord;
  resolve: (recorded: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * The worker's side of the claim-with-recording refill (store/webhook-deliveries/record-and-claim.ts):
 * told of each batch before it is written, it frees the batch's slots and may hand back a claim
 * to make in the same statement.
 */
export interface RecordingClaims {
  /** The attempts `records` are about to be written: the claim to make with them, if one is due. */
  beforeWrite(records: readonly PendingRecord[]): ClaimWithRecording | undefined;
}

/** A claim made in a recording's statement. */
export interface ClaimWithRecording {
  request: ClaimRequest;
  /** What the claim took; called before the callers of the batch learn whether theirs was recorded. */
  took(batch: ClaimedDelivery[]): void;
  /** The statement failed: nothing was claimed (nor recorded). */
  failed(): void;
}

/**
 * Records finished attempts in batches (group commit): the first attempt to finish is written at
 * the end of the event loop's turn, with every other that finished in that turn, and those that
 * finish while that transaction runs are written together by the next one. An idle worker adds no
 * timer; a busy one writes one transaction per turn or round trip instead of one per delivery (on
 * SQLite, where a write takes no round trip, every attempt had a commit of its own before). Each
 * caller learns whether its own attempt was recorded (false: the lease was no longer its own), and
 * a failed transaction fails every attempt in it. Given `claims` (the claim-with-recording
 * refill), a batch's statement may also claim the worker's next batch.
 */
export class AttemptRecorder {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #claims: RecordingClaims | undefined;
  readonly #queue: Queued[] = [];
  /** Set and cleared synchronously, so that an attempt queued as a flush ends starts the next one. */
  #active = false;
  #flushing: Promise<void> = Promise.resolve();

  constructor(options: { db: Db; clock: Clock; claims?: RecordingClaims }) {
    this.#db = options.db;
    this.#clock = options.clock;
    this.#claims = options.claims;
  }

  /** Queues an attempt; resolves with whether it was recorded, rejects if the database failed. */
  record(item: PendingRecord): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#active) {
        this.#active = true;
        // At the end of this turn of the event loop: the sends whose answers were read in the same
        // turn (under load, several) share the transaction. No timer.
        this.#flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#flush());
      }
    });
  }

  /** Resolves once everything queued so far is written. */
  async settled(): Promise<void> {
    while (this.#active) await this.#flushing;
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, MAX_RECORD_BATCH);
        try {
          const recorded = await this.#write(batch.map((q) => q.item));
          for (const q of batch) q.resolve(recorded.has(q.item.deliveryId));
        } catch (err) {
          for (const q of batch) q.reject(err);
        }
      }
    } finally {
      this.#active = false;
    }
  }

  /** Writes one batch, with the claim the worker asks to make in the same statement if any. */
  async #write(records: PendingRecord[]): Promise<Set<string>> {
    const claim = this.#claims?.beforeWrite(records);
    if (!claim) return recordAttempts(this.#db, records, this.#clock.now().toISOString());
    let result: Awaited<ReturnType<typeof recordAttemptsAndClaim>>;
    try {
      result = await recordAttemptsAndClaim(this.#db, records, claim.request);
    } catch (err) {
      claim.failed();
      throw err;
    }
    claim.took(result.claimed);
    return result.recorded;
  }
}
