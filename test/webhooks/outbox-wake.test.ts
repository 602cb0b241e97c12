import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readWakePayload, wakePayload } from '../../src/webhooks/outbox.ts';
import { DeliveryWakeups } from '../../src/webhooks/wake.ts';

// The NOTIFY payload of a wake-up: the endpoints of the new deliveries, or none named, and the
// origin of the commit.

test('a wake-up naming endpoints reads back as the same set, with its origin', () => {
  const ids = new Set(['whk_a', 'whk_b', 'whk_c']);
  const { origin } = new DeliveryWakeups();
  assert.equal(wakePayload(ids, origin), `${origin}/whk_a,whk_b,whk_c`);
  assert.deepEqual(readWakePayload(wakePayload(ids, origin)), { endpointIds: ids, origin });
  assert.deepEqual(readWakePayload(wakePayload(ids)), { endpointIds: ids });
});

test('unknown endpoints, or more than 100, name none: every worker looks', () => {
  const { origin } = new DeliveryWakeups();
  assert.deepEqual(readWakePayload(wakePayload(undefined, origin)), { origin });
  const many = new Set(Array.from({ length: 101 }, (_, i) => `whk_${String(i).padStart(26, '0')}`));
  assert.deepEqual(readWakePayload(wakePayload(many, origin)), { origin });
  const hundred = new Set([...many].slice(0, 100));
  assert.deepEqual(readWakePayload(wakePayload(hundred, origin)).endpointIds, hundred);
  // 100 ids and the origin fit PostgreSQL's 8000-byte payload with room to spare.
  assert.ok(Buffer.byteLength(wakePayload(hundred, origin)) < 8000);
  assert.deepEqual(readWakePayload(''), {});
  assert.deepEqual(readWakePayload(undefined), {});
});

test('every channel has an origin of its own, which neither a slash nor a comma can break', () => {
  const origins = Array.from({ length: 50 }, () => new DeliveryWakeups().origin);
  assert.equal(new Set(origins).size, 50);
  for (const origin of origins) assert.match(origin, /^[A-Za-z0-9_-]{12}$/);
});

test("an older version's payload, ids alone, still names its endpoints", () => {
  assert.deepEqual(readWakePayload('whk_a,whk_b'), { endpointIds: new Set(['whk_a', 'whk_b']) });
});
