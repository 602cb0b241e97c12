import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimPolicy, planClaim, type WorkerLoad } from '../src/domain/claim-plan.ts';

// The claim policy of a delivery worker as a pure function: what the next claim may take, given
// what the worker has in flight and which endpoints timed out. No database.

const policy = claimPolicy({ maxInFlight: 64, maxPerEndpoint: 16 });
const load = (perEndpoint: Record<string, number> = {}, timedOut: string[] = []): WorkerLoad => {
  const counts = new Map(Object.entries(perEndpoint));
  return { active: [...counts.values()].reduce((a, b) => a + b, 0), perEndpoint: counts, timedOut: new Set(timedOut) };
};

test('the default policy: 16 per endpoint, one to an endpoint that timed out, 8 of 64 slots reserved', () => {
  assert.deepEqual(policy, {
    maxInFlight: 64,
    maxPerEndpoint: 16,
    maxPerTimedOutEndpoint: 1,
    reserve: 8,
    laneWidth: 2,
  });
  // A small worker keeps nothing back; the lane is never wider than an endpoint's cap.
  assert.equal(claimPolicy({ maxInFlight: 5, maxPerEndpoint: 4 }).reserve, 0);
  assert.equal(claimPolicy({ maxInFlight: 64, maxPerEndpoint: 1 }).laneWidth, 1);
});

test('an idle worker claims all but the reserve, up to 16 per endpoint', () => {
  const plan = planClaim(policy, load());
  assert.equal(plan.limit, 56);
  assert.equal(plan.perEndpoint, 16);
  assert.equal(plan.reserved, false);
  assert.deepEqual([...plan.allowances], []);
  assert.equal(plan.capOf('whk_any'), 16);
  // A caller's own bound is kept.
  assert.equal(planClaim(policy, load(), 3).limit, 3);
});

test("the sends in flight count toward each endpoint's cap", () => {
  const plan = planClaim(policy, load({ whk_a: 10, whk_b: 16 }));
  assert.equal(plan.limit, 64 - 26 - 8);
  assert.deepEqual(Object.fromEntries(plan.allowances), { whk_a: 6, whk_b: 0 });
});

test('an endpoint whose last attempt timed out gets one send at a time, none while one is in flight', () => {
  const plan = planClaim(policy, load({ whk_silent: 1 }, ['whk_silent', 'whk_idle']));
  assert.deepEqual(Object.fromEntries(plan.allowances), { whk_silent: 0, whk_idle: 1 });
  assert.equal(plan.capOf('whk_idle'), 1);
  assert.equal(plan.capOf('whk_other'), 16);
});

test('four silent endpoints that hold all but the reserve leave it to endpoints with little in flight', () => {
  // 14 each to four endpoints that have not timed out yet (no attempt has finished).
  const silent = { whk_1: 14, whk_2: 14, whk_3: 14, whk_4: 14 };
  const plan = planClaim(policy, load(silent));
  assert.equal(plan.reserved, true);
  assert.equal(plan.limit, 8);
  // Any other endpoint may have two in flight; the silent ones get nothing more.
  assert.equal(plan.perEndpoint, 2);
  assert.deepEqual(Object.fromEntries(plan.allowances), { whk_1: 0, whk_2: 0, whk_3: 0, whk_4: 0 });
  const withFast = planClaim(policy, load({ ...silent, whk_fast: 1 }));
  assert.equal(withFast.allowances.get('whk_fast'), 1);
  assert.equal(withFast.capOf('whk_fast'), 2);
  // A full worker claims nothing.
  assert.equal(planClaim(policy, load({ whk_1: 16, whk_2: 16, whk_3: 16, whk_4: 16 })).limit, 0);
});

test('once they timed out, the silent endpoints hold one slot each and the rest is open again', () => {
  const silent = ['whk_1', 'whk_2', 'whk_3', 'whk_4'];
  const plan = planClaim(policy, load(Object.fromEntries(silent.map((id) => [id, 1])), silent));
  assert.equal(plan.reserved, false);
  assert.equal(plan.limit, 64 - 4 - 8);
  assert.equal(plan.perEndpoint, 16);
  assert.deepEqual(Object.fromEntries(plan.allowances), { whk_1: 0, whk_2: 0, whk_3: 0, whk_4: 0 });
});
