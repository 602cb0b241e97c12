/**
 * The freshness rule for presentations that carry their own time (`now`, unix seconds): Groth16
 * proves `valid_until > now` against it, BBS binds it into the presentation header. Both accept a
 * time at most {@link MAX_NOW_BEHIND_SECONDS} behind the service clock and
 * {@link MAX_NOW_AHEAD_SECONDS} ahead of it, so a captured presentation stops verifying a minute
 * after it was made (issue 10, findings 2 and 5).
 */

/**
 * How far a presentation's `now` may be behind the service's clock: time enough for a phone to
 * prove and send. For Groth16 it is also how long after `valid_until` an expired credential can
 * still prove `unexpired = 1`.
 */
export const MAX_NOW_BEHIND_SECONDS = 60;
/** How far a presentation's `now` may be ahead of the service's clock (a wallet's clock running fast). */
export const MAX_NOW_AHEAD_SECONDS = 30;

/** Whether `now` is a time a presentation may state: a non-negative safe integer of unix seconds. */
export function isPresentationTime(now: unknown): now is number {
  return typeof now === 'number' && Number.isSafeInteger(now) && now >= 0;
}

/** Why `now` is not fresh against the service clock, or undefined when it is. */
export function presentationTimeProblem(now: number, serviceClock: Date): string | undefined {
  const serviceNow = Math.floor(serviceClock.getTime() / 1000);
  if (serviceNow - now > MAX_NOW_BEHIND_SECONDS || now - serviceNow > MAX_NOW_AHEAD_SECONDS) {
    return `now must be at most ${MAX_NOW_BEHIND_SECONDS} s behind and ${MAX_NOW_AHEAD_SECONDS} s ahead of the service clock (it is ${serviceNow - now} s behind)`;
  }
  return undefined;
}
