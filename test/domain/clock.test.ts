import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoTimestamp, timestampMs } from '../../src/domain/clock.ts';

const DAY_MS = 86_400_000;

test('isoTimestamp is the string toISOString makes, on every first and last millisecond of a day to 2600', () => {
  const end = Date.UTC(2600, 0, 1);
  for (let ms = 0; ms < end; ms += DAY_MS) {
    for (const at of [ms, ms + DAY_MS - 1]) assert.equal(isoTimestamp(new Date(at)), new Date(at).toISOString());
  }
});

test('isoTimestamp is the string toISOString makes, at random instants and at the edges', () => {
  // A fixed sequence (a linear congruential generator), so that a failure repeats.
  let seed = 20261129;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const last = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
  const instants = [
    0,
    1,
    999,
    59_999,
    3_599_999,
    Date.UTC(1972, 1, 29, 12, 0, 0, 5),
    Date.UTC(2000, 1, 29, 23, 59, 59, 99),
    Date.UTC(2100, 1, 28, 0, 0, 0, 10),
    Date.UTC(2100, 2, 1),
    Date.UTC(2400, 1, 29, 1, 2, 3, 4),
    last,
    ...Array.from({ length: 100_000 }, () => Math.floor(next() * last)),
  ];
  for (const ms of instants) assert.equal(isoTimestamp(new Date(ms)), new Date(ms).toISOString(), String(ms));
});

test('isoTimestamp leaves instants before 1970 and past year 9999 to toISOString, and throws on an invalid date', () => {
  for (const ms of [-1, -DAY_MS * 400, Date.UTC(10_000, 0, 1), 8.64e15, -8.64e15]) {
    assert.equal(isoTimestamp(new Date(ms)), new Date(ms).toISOString());
  }
  assert.throws(() => isoTimestamp(new Date(Number.NaN)), RangeError);
});

test('timestampMs reads what Date.parse reads, on every first and last millisecond of a day to 2600 and at random', () => {
  const end = Date.UTC(2600, 0, 1);
  for (let ms = 0; ms < end; ms += DAY_MS) {
    for (const at of [ms, ms + DAY_MS - 1]) assert.equal(timestampMs(new Date(at).toISOString()), at);
  }
  let seed = 7;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const last = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
  for (let i = 0; i < 100_000; i++) {
    const ms = Math.floor(next() * last);
    assert.equal(timestampMs(new Date(ms).toISOString()), ms);
  }
});

test('timestampMs agrees with Date.parse on every other form, valid or not', () => {
  const texts = [
    '2026-02-28T10:00:00.000Z',
    '2026-02-29T10:00:00.000Z',
    '2024-02-29T10:00:00.000Z',
    '2100-02-29T10:00:00.000Z',
    '2000-02-29T10:00:00.000Z',
    '2026-04-31T10:00:00.000Z',
    '2026-12-31T23:59:59.999Z',
    '2026-13-01T00:00:00.000Z',
    '2026-00-10T00:00:00.000Z',
    '2026-01-00T00:00:00.000Z',
    '2026-01-32T00:00:00.000Z',
    '2026-01-01T24:00:00.000Z',
    '2026-01-01T23:60:00.000Z',
    '2026-01-01T23:59:60.000Z',
    '1969-12-31T23:59:59.999Z',
    '0000-01-01T00:00:00.000Z',
    '2026-01-01t10:00:00.000Z',
    '2026-01-01T10:00:00.000z',
    '2026-01-01 10:00:00.000Z',
    '2026/01/01T10:00:00.000Z',
    '2026-01-01T10:00:00,000Z',
    '2026-01-01T10:00:00.00xZ',
    '2026-0a-01T10:00:00.000Z',
    ' 026-01-01T10:00:00.000Z',
    '2026-01-01T10:00:00Z',
    '2026-01-01T10:00:00.000+01:00',
    '2026-01-01',
    '+010000-01-01T00:00:00.000Z',
    '',
    'not a date',
  ];
  for (const text of texts) assert.ok(Object.is(timestampMs(text), Date.parse(text)), text);
});

test('the one format is made and read without V8, any other through it', (t) => {
  const parse = t.mock.method(Date, 'parse');
  const format = t.mock.method(Date.prototype, 'toISOString');
  assert.equal(timestampMs('2026-11-29T01:02:03.456Z'), Date.UTC(2026, 10, 29, 1, 2, 3, 456));
  assert.equal(isoTimestamp(new Date(Date.UTC(2026, 10, 29, 1, 2, 3, 456))), '2026-11-29T01:02:03.456Z');
  assert.equal(parse.mock.callCount(), 0);
  assert.equal(format.mock.callCount(), 0);
  timestampMs('2026-11-29T01:02:03Z');
  isoTimestamp(new Date(-1));
  assert.equal(parse.mock.callCount(), 1);
  assert.equal(format.mock.callCount(), 1);
});
