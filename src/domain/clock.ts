/** An opaque handle of a timer set on a {@link Clock}. */
export type TimerHandle = object;

export interface TimerOptions {
  /** Whether a pending timer keeps the process alive (real clock only); true by default. */
  keepAlive?: boolean;
}

/**
 * The source of "now" and of timers for everything time-dependent: expiry, retries, leases, the
 * worker's poll, the periodic jobs, the sender's timeout. Tests pass a {@link TestClock}, whose
 * time and timers move only when the test says so.
 */
export interface Clock {
  now(): Date;
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

export const systemClock: Clock = {
  now: () => new Date(),
  setTimeout(callback, ms, options) {
    const timer = setTimeout(callback, ms);
    if (options?.keepAlive === false) timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    if (handle !== undefined) clearTimeout(handle as NodeJS.Timeout);
  },
};

interface TestTimer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * A clock that only moves when told to, so tests never sleep to let time pass. Moving it fires the
 * timers that come due, in order, each with the clock set to its due time.
 */
export class TestClock implements Clock {
  #ms: number;
  #timers: TestTimer[] = [];
  #nextId = 1;

  constructor(start: Date | string = '2026-11-21T10:00:00.000Z') {
    this.#ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#ms);
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer = { id: this.#nextId++, at: this.#ms + Math.max(0, ms), callback };
    this.#timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    this.#timers = this.#timers.filter((timer) => timer !== handle);
  }

  /** Timers set and not yet fired or cleared. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  advance(ms: number): void {
    this.#moveTo(this.#ms + ms);
  }

  set(to: Date | string): void {
    const target = new Date(to).getTime();
    if (target < this.#ms) {
      // Going back in time fires nothing.
      this.#ms = target;
      return;
    }
    this.#moveTo(target);
  }

  #moveTo(target: number): void {
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#ms = Math.max(this.#ms, due.at);
      due.callback();
    }
    this.#ms = target;
  }
}

const DAY_MS = 86_400_000;
/** 9999-12-31T23:59:59.999Z: the last instant whose ISO string has a four-digit year. */
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;
const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'));

/**
 * ISO 8601 UTC with milliseconds, the one timestamp format of the API and the database: the string
 * `date.toISOString()` makes. V8 formats that through C's printf (about 6,000 instructions a call,
 * three for every session created); for the years 1970 to 9999 this makes it from integers, and
 * leaves any other instant (and an invalid date, which throws) to `toISOString`.
 */
export function isoTimestamp(date: Date): string {
  const ms = date.getTime();
  if (!(ms >= 0 && ms <= LAST_FOUR_DIGIT_YEAR_MS)) return date.toISOString();
  const days = Math.floor(ms / DAY_MS);
  let rest = ms - days * DAY_MS;
  const [year, month, day] = civilFromDays(days);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  return `${year}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

/**
 * Year, month (1–12) and day of the month of a count of days since 1970-01-01 (not negative), in
 * the proleptic Gregorian calendar: Howard Hinnant's `civil_from_days`, with eras of 400 years
 * starting on 1 March.
 */
function civilFromDays(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  return [yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day];
}

/**
 * The instant an ISO timestamp names, in milliseconds, as `Date.parse` reads it (NaN if it names
 * none). The one format of the API and the database (`isoTimestamp`'s, years 1970 to 9999) is read
 * from its digits, as every session read checks its expiry; any other form, and any field out of
 * range (a 30 February, an hour 24), is left to `Date.parse`, which V8 runs through a general
 * date parser (about 3,000 instructions a call).
 */
export function timestampMs(iso: string): number {
  if (iso.length !== 24) return Date.parse(iso);
  for (let i = 0; i < SEPARATOR_AT.length; i++)
    if (iso.charCodeAt(SEPARATOR_AT[i]) !== SEPARATOR_CODE[i]) return Date.parse(iso);
  const year = digitsAt(iso, 0, 4);
  const month = digitsAt(iso, 5, 2);
  const day = digitsAt(iso, 8, 2);
  const hours = digitsAt(iso, 11, 2);
  const minutes = digitsAt(iso, 14, 2);
  const seconds = digitsAt(iso, 17, 2);
  const millis = digitsAt(iso, 20, 3);
  if (
    !(year >= 1970) ||
    !(month >= 1 && month <= 12) ||
    !(day >= 1 && day <= daysInMonth(year, month)) ||
    !(hours <= 23 && minutes <= 59 && seconds <= 59 && millis >= 0)
  )
    return Date.parse(iso);
  return daysFromCivil(year, month, day) * DAY_MS + hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + millis;
}

/** Where `YYYY-MM-DDTHH:MM:SS.sssZ` has its separators, and their character codes (`--T::.Z`). */
const SEPARATOR_AT = [4, 7, 10, 13, 16, 19, 23];
const SEPARATOR_CODE = [0x2d, 0x2d, 0x54, 0x3a, 0x3a, 0x2e, 0x5a];

/** The number written by `length` decimal digits at `start`; NaN if any is not a digit. */
function digitsAt(text: string, start: number, length: number): number {
  let value = 0;
  for (let i = start; i < start + length; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}

/** Days since 1970-01-01 of a date of the proleptic Gregorian calendar: the inverse of {@link civilFromDays}. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
