/**
 * When a failed delivery is tried again (docs/webhooks.md, Retries): 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 12 h,
 * 24 h after the previous attempt (about 45 h in all), each ±20 % jitter so that deliveries that
 * failed together (an endpoint that was down) do not all come back at the same instant. After the
 * last retry the delivery is `failed`.
 */

/** The default schedule, in seconds: delay before retry 1, 2, … */
export const DEFAULT_RETRY_SCHEDULE_SECONDS: readonly number[] = Object.freeze([
  10, 60, 300, 1800, 7200, 21600, 43200, 86400,
]);

/** Relative jitter applied to every delay: the delay is drawn from [0.8 d, 1.2 d). */
export const RETRY_JITTER = 0.2;

/** One week: a longer single delay is almost certainly a typo (minutes or ms meant as seconds). */
const MAX_DELAY_SECONDS = 7 * 24 * 3600;
const MAX_RETRIES = 50;

/** A retry schedule that cannot be used; the message says which entry and why. */
export class RetryScheduleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RetryScheduleError';
  }
}

/**
 * Parses a retry schedule (`WEBHOOK_RETRY_SCHEDULE`): comma-separated positive whole seconds,
 * e.g. `10,60,300`. Unset or blank gives the default schedule.
 *
 * @throws RetryScheduleError naming the bad entry: configuration is checked once at start and a
 *   bad value must stop the process, not be guessed at. The caller names the variable.
 */
export function parseRetrySchedule(value: string | undefined): readonly number[] {
  if (value === undefined || value.trim() === '') return DEFAULT_RETRY_SCHEDULE_SECONDS;
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length > MAX_RETRIES) {
    throw new RetryScheduleError(`has ${entries.length} entries; at most ${MAX_RETRIES} retries are allowed`);
  }
  return Object.freeze(
    entries.map((entry, index) => {
      if (!/^\d+$/.test(entry) || Number(entry) === 0) {
        throw new RetryScheduleError(
          `entry ${index + 1} ("${entry}") is not a positive whole number of seconds; expected e.g. "10,60,300"`,
        );
      }
      const seconds = Number(entry);
      if (seconds > MAX_DELAY_SECONDS) {
        throw new RetryScheduleError(
          `entry ${index + 1} (${seconds} s) is longer than one week (${MAX_DELAY_SECONDS} s); the values are seconds`,
        );
      }
      return seconds;
    }),
  );
}

/**
 * Delay before the next attempt, after attempt `attemptNumber` failed.
 *
 * Attempt 1 is the first delivery; the delay after it is `schedule[0]`, and so on, so a schedule of
 * n entries allows n + 1 attempts in all.
 *
 * @param random a source of numbers in [0, 1) (Math.random by default; tests pass a fixed one).
 * @returns milliseconds, or `null` when attempt `attemptNumber` was the last one.
 * @throws RangeError when `attemptNumber` is not a whole number >= 1 (a caller fault).
 */
export function nextAttemptDelayMs(
  attemptNumber: number,
  schedule: readonly number[] = DEFAULT_RETRY_SCHEDULE_SECONDS,
  random: () => number = Math.random,
): number | null {
  if (!Number.isInteger(attemptNumber) || attemptNumber < 1) {
    throw new RangeError(`attemptNumber must be a whole number >= 1, got ${attemptNumber}`);
  }
  const baseSeconds = schedule[attemptNumber - 1];
  if (baseSeconds === undefined) return null;
  const factor = 1 + (2 * random() - 1) * RETRY_JITTER;
  return Math.round(baseSeconds * 1000 * factor);
}

/** Total number of attempts a schedule allows (the first delivery plus one per entry). */
export function maxAttempts(schedule: readonly number[] = DEFAULT_RETRY_SCHEDULE_SECONDS): number {
  return schedule.length + 1;
}
