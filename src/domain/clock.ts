/** The source of "now" for everything time-dependent. Tests pass a {@link TestClock}. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to, so tests never sleep to let time pass. */
export class TestClock implements Clock {
  #ms: number;
  constructor(start: Date | string = '2026-11-21T10:00:00.000Z') {
    this.#ms = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(to: Date | string): void {
    this.#ms = new Date(to).getTime();
  }
}

/** ISO 8601 UTC with milliseconds, the one timestamp format of the API and the database. */
export function isoTimestamp(date: Date): string {
  return date.toISOString();
}
