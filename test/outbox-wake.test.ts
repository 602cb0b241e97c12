import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wakeEndpoints, wakePayload } from '../src/webhooks/outbox.ts';

// The NOTIFY payload of a wake-up: the endpoints of the new deliveries, or none named.

test('a wake-up naming endpoints reads back as the same set', () => {
  const ids = new Set(['whk_a', 'whk_b', 'whk_c']);
  assert.equal(wakePayload(ids), 'whk_a,whk_b,whk_c');
  assert.deepEqual(wakeEndpoints(wakePayload(ids)), ids);
});

test('unknown endpoints, or more than 100, name none: every worker looks', () => {
  assert.equal(wakePayload(undefined), '');
  const many = new Set(Array.from({ length: 101 }, (_, i) => `whk_${String(i).padStart(26, '0')}`));
  assert.equal(wakePayload(many), '');
  const hundred = new Set([...many].slice(0, 100));
  assert.deepEqual(wakeEndpoints(wakePayload(hundred)), hundred);
  // 100 ids fit PostgreSQL's 8000-byte payload with room to spare.
  assert.ok(Buffer.byteLength(wakePayload(hundred)) < 8000);
  assert.equal(wakeEndpoints(''), undefined);
  assert.equal(wakeEndpoints(undefined), undefined);
});
