import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClaimPlanner, claimPolicy, planClaim, type WorkerLoad } from '../../src/domain/claim-plan.ts';

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
    claimAhead: 0,
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

// The worker's claim bookkeeping (ClaimPlanner): when the loop claims, what it may skip, when a
// freed slot wakes it. Times are plain numbers; nothing is sent or stored.

const small = claimPolicy({ maxInFlight: 16, maxPerEndpoint: 4 }); // reserve 2, lane 2, 1 after a timeout
const POLL = 1_000;
const times = (id: string, n: number) => Array.from({ length: n }, () => id);

/** The loop's claim at `at` that takes `endpointIds`, and what the planner makes of it. */
function loopClaim(planner: ClaimPlanner, at: number, endpointIds: string[]) {
  const ticket = planner.nextLoopClaim(at)!;
  const result = planner.claimed(ticket, endpointIds);
  return { ticket, result, next: planner.settle(ticket, result, at, POLL) };
}

/** whk_a, at its cap of 4, is down to half of it (which wakes the loop) and claimed up to 4 again at `at`. */
function refillA(planner: ClaimPlanner, at: number) {
  planner.release('whk_a', true);
  const woke = planner.release('whk_a', true);
  return { woke, ...loopClaim(planner, at, times('whk_a', 2)) };
}

test('a claim that caps an endpoint: wake-ups naming only it are skipped until half its sends are done', () => {
  const planner = new ClaimPlanner(small);
  const first = planner.nextLoopClaim(0)!;
  assert.equal(first.plan.limit, 14);
  assert.equal(first.knownDue, false);
  const result = planner.claimed(first, [...times('whk_a', 4), 'whk_b']);
  assert.deepEqual(result, { capped: true, full: false, reserved: false });
  // Capped and never looked past: claim again at once.
  assert.deepEqual(planner.settle(first, result, 0, POLL), { more: true, waitMs: POLL });
  assert.equal(planner.wake(new Set(['whk_a'])), false);
  assert.equal(planner.wake(new Set(['whk_a', 'whk_b'])), true);
  assert.equal(planner.active, 5);
  // 3 of 4 left: not yet; 2 of 4: the loop claims for it again, knowing deliveries are due.
  assert.equal(planner.release('whk_a', true), false);
  assert.equal(planner.release('whk_a', true), true);
  assert.equal(planner.wake(new Set(['whk_a'])), true);
  assert.equal(planner.nextLoopClaim(1)!.knownDue, true);
  // Consumed by that claim.
  assert.equal(planner.nextLoopClaim(2)!.knownDue, false);
});

test('a stopping worker is not woken by released slots', () => {
  const planner = new ClaimPlanner(small);
  planner.claimed(planner.nextLoopClaim(0)!, times('whk_a', 4));
  assert.equal(planner.release('whk_a', false), false);
  assert.equal(planner.release('whk_a', false), false);
  assert.equal(planner.active, 2);
});

test('after a look past a capped endpoint found nothing else, capping it again waits out the poll interval', () => {
  const planner = new ClaimPlanner(small);
  loopClaim(planner, 0, times('whk_a', 4));
  // With whk_a at its cap, a claim takes one delivery elsewhere: nothing else was due.
  const past = planner.nextLoopClaim(100)!;
  assert.equal(past.plan.allowances.get('whk_a'), 0);
  const pastResult = planner.claimed(past, ['whk_b']);
  assert.deepEqual(planner.settle(past, pastResult, 100, POLL), { more: false, waitMs: POLL });
  // whk_a refills and is capped again 200 ms later: no second look past it before the interval ends.
  const refill = refillA(planner, 300);
  assert.equal(refill.woke, true);
  assert.equal(refill.result.capped, true);
  assert.deepEqual(refill.next, { more: false, waitMs: 800 });
  // A wake-up (new deliveries elsewhere) makes the look due again.
  assert.equal(planner.wake(new Set(['whk_c'])), true);
  assert.deepEqual(refillA(planner, 400).next, { more: true, waitMs: POLL });
});

test('a wake-up while the look past a capped endpoint is under way keeps the next look', () => {
  const planner = new ClaimPlanner(small);
  loopClaim(planner, 0, times('whk_a', 4));
  const past = planner.nextLoopClaim(100)!;
  // New deliveries to another endpoint commit while the claim runs: what it found says nothing of them.
  assert.equal(planner.wake(new Set(['whk_c'])), true);
  planner.settle(past, planner.claimed(past, []), 100, POLL);
  assert.deepEqual(refillA(planner, 300).next, { more: true, waitMs: POLL });
});

test('a full batch saturates the worker: claims know more is due, freed slots wake it a quarter at a time', () => {
  const planner = new ClaimPlanner(small);
  const first = planner.nextLoopClaim(0)!;
  const endpoints = Array.from({ length: 14 }, (_, i) => `whk_${i}`);
  const result = planner.claimed(first, endpoints);
  assert.deepEqual(result, { capped: false, full: true, reserved: false });
  assert.deepEqual(planner.settle(first, result, 0, POLL), { more: true, waitMs: POLL });
  assert.equal(planner.hasRoom, true);
  // Held to the reserve: two slots, for endpoints with fewer than two in flight.
  const reserved = planner.nextLoopClaim(1)!;
  assert.equal(reserved.knownDue, true);
  assert.equal(reserved.plan.reserved, true);
  assert.equal(reserved.plan.limit, 2);
  const reservedResult = planner.claimed(reserved, ['whk_x']);
  assert.deepEqual(reservedResult, { capped: false, full: false, reserved: true });
  // A claim held to the reserve keeps what the one before it said: still saturated.
  assert.deepEqual(planner.settle(reserved, reservedResult, 1, POLL), { more: false, waitMs: POLL });
  const last = planner.nextLoopClaim(2)!;
  assert.equal(last.knownDue, true);
  planner.claimed(last, ['whk_y']);
  assert.equal(planner.hasRoom, false);
  assert.equal(planner.nextLoopClaim(2), undefined);
  // 16 in flight: woken once 4 are free, not before.
  for (const id of endpoints.slice(0, 3)) assert.equal(planner.release(id, true), false);
  assert.equal(planner.release(endpoints[3]!, true), true);
  assert.equal(planner.nextLoopClaim(3)!.knownDue, true);
});

test('held to the reserve, an endpoint with its lane full is claimed for again at half its lane', () => {
  const planner = new ClaimPlanner(small);
  const first = planner.nextLoopClaim(0)!;
  planner.claimed(first, [...times('whk_a', 4), ...times('whk_b', 4), ...times('whk_c', 3), ...times('whk_d', 3)]);
  // whk_c has 3 in flight, under its cap of 4 but over the lane of 2: it gets nothing now.
  assert.equal(planner.wake(new Set(['whk_c'])), true);
  const reserved = planner.nextLoopClaim(1)!;
  assert.equal(reserved.plan.reserved, true);
  assert.equal(reserved.plan.allowances.get('whk_c'), 0);
  assert.equal(planner.wake(new Set(['whk_c'])), false);
  assert.equal(planner.release('whk_c', true), false);
  assert.equal(planner.release('whk_c', true), true);
});

test('a timeout caps its endpoint at one until an answer; the oldest timeouts are forgotten first', () => {
  const planner = new ClaimPlanner(small, { timedOutRemembered: 2 });
  planner.observe('whk_a', 'timed-out');
  assert.equal(planner.wake(new Set(['whk_a'])), false);
  assert.equal(planner.nextLoopClaim(0)!.plan.capOf('whk_a'), 1);
  planner.observe('whk_a', 'unanswered');
  assert.equal(planner.stepClaim(16).plan.capOf('whk_a'), 1);
  planner.observe('whk_a', 'answered');
  assert.equal(planner.stepClaim(16).plan.capOf('whk_a'), 4);
  for (const id of ['whk_x', 'whk_y', 'whk_z']) planner.observe(id, 'timed-out');
  const plan = planner.stepClaim(16).plan;
  assert.deepEqual(
    ['whk_x', 'whk_y', 'whk_z'].map((id) => plan.capOf(id)),
    [4, 1, 1],
  );
});

test('an answering endpoint is claimed ahead; a timeout, an attempt unanswered or the reserve end that', () => {
  const ahead = claimPolicy({ maxInFlight: 64, maxPerEndpoint: 16, claimAhead: 16 });
  assert.equal(ahead.claimAhead, 16);
  const answering = (ids: string[]) => ({ ...load({ whk_a: 10 }), answering: new Set(ids) });
  // Answered, with 10 in flight: 32 claimed in all, so 22 more, of which 16 at most are sent at once.
  let plan = planClaim(ahead, answering(['whk_a', 'whk_idle']));
  assert.equal(plan.capOf('whk_a'), 32);
  assert.equal(plan.allowances.get('whk_a'), 22);
  // Answered with nothing in flight: its allowance is listed too (the default is 16).
  assert.equal(plan.allowances.get('whk_idle'), 32);
  // Not heard from: the plain cap. Timed out: one, even if listed as answering.
  assert.equal(plan.capOf('whk_new'), 16);
  plan = planClaim(ahead, { ...answering(['whk_a']), timedOut: new Set(['whk_a']) });
  assert.equal(plan.capOf('whk_a'), 1);
  // Held to the reserve: the lane width, as for every endpoint.
  plan = planClaim(ahead, { ...load({ whk_a: 10, whk_b: 47 }), answering: new Set(['whk_a']) });
  assert.equal(plan.reserved, true);
  assert.equal(plan.capOf('whk_a'), 2);
  // A policy without it ignores the answers.
  assert.equal(planClaim(policy, answering(['whk_a'])).capOf('whk_a'), 16);

  const planner = new ClaimPlanner(claimPolicy({ maxInFlight: 3, maxPerEndpoint: 2, claimAhead: 2 }));
  assert.equal(planner.stepClaim(3).plan.capOf('whk_a'), 2, 'not heard from yet');
  planner.observe('whk_a', 'answered');
  assert.equal(planner.stepClaim(3).plan.capOf('whk_a'), 4);
  planner.observe('whk_a', 'unanswered');
  assert.equal(planner.stepClaim(3).plan.capOf('whk_a'), 2, 'no answer: no claim ahead');
  planner.observe('whk_a', 'answered');
  planner.observe('whk_a', 'timed-out');
  assert.equal(planner.stepClaim(3).plan.capOf('whk_a'), 1);
  // Each answering endpoint is an allowance of every claim: the planner keeps as many as it has slots.
  for (const id of ['whk_w', 'whk_x', 'whk_y', 'whk_z']) planner.observe(id, 'answered');
  const caps = planner.stepClaim(3).plan;
  assert.deepEqual(
    ['whk_w', 'whk_x', 'whk_y', 'whk_z'].map((id) => caps.capOf(id)),
    [2, 4, 4, 4],
  );
  assert.equal(caps.allowances.size, 4, 'whk_a (timed out) and the three most recent answers');
});

test("a commit's own wake-up says deliveries are due; a step neither uses nor consumes that", () => {
  const planner = new ClaimPlanner(small);
  assert.equal(planner.wake(undefined, { committed: true }), true);
  assert.equal(planner.nextLoopClaim(0)!.knownDue, false);
  assert.equal(planner.wake(new Set(['whk_a']), { committed: true }), true);
  const step = planner.stepClaim(3);
  assert.equal(step.knownDue, false);
  assert.equal(step.loop, undefined);
  assert.equal(planner.claimed(step, times('whk_a', 3)).full, true);
  assert.equal(planner.nextLoopClaim(1)!.knownDue, true);
  // A plan that may take nothing is never full.
  const full = new ClaimPlanner(claimPolicy({ maxInFlight: 1, maxPerEndpoint: 1 }));
  full.claimed(full.stepClaim(1), ['whk_a']);
  assert.equal(full.claimed(full.stepClaim(1), []).full, false);
});

test('the slots a recording frees are free for the claim that rides in it, planned only when they call for one', () => {
  const planner = new ClaimPlanner(small);
  const endpoints = Array.from({ length: 14 }, (_, i) => `whk_${i}`);
  const first = planner.nextLoopClaim(0)!;
  planner.settle(first, planner.claimed(first, endpoints), 0, POLL);
  const reserved = planner.nextLoopClaim(1)!;
  planner.settle(reserved, planner.claimed(reserved, ['whk_x', 'whk_y']), 1, POLL);
  assert.equal(planner.active, 16);
  // Three finished: saturated, but a quarter of the slots is not free yet. Their slots are free all the same.
  assert.equal(planner.releaseForRecording(endpoints.slice(0, 3), 2), undefined);
  assert.equal(planner.active, 13);
  // The fourth: a quarter free, so the loop's next claim, planned with all four slots free (two
  // kept back), rides in the recording.
  const ticket = planner.releaseForRecording([endpoints[3]!], 3)!;
  assert.equal(planner.active, 12);
  assert.equal(ticket.plan.limit, 2);
  assert.equal(ticket.knownDue, true);
  assert.equal(ticket.loop?.at, 3);
  assert.equal(ticket.busy.get('whk_3'), undefined);
  assert.equal(ticket.busy.get('whk_4'), 1);
  // It settles as the loop's own claim would.
  assert.deepEqual(planner.settle(ticket, planner.claimed(ticket, ['whk_0', 'whk_1']), 3, POLL), {
    more: true,
    waitMs: POLL,
  });
  assert.equal(planner.active, 14);
});

test('a capped endpoint down to half its cap in one recording: the claim in it may take it back to its cap', () => {
  const planner = new ClaimPlanner(small);
  const first = planner.nextLoopClaim(0)!;
  planner.settle(first, planner.claimed(first, [...times('whk_a', 4), 'whk_b']), 0, POLL);
  // A timeout narrows whk_b to one: its allowance stays 0 while its one send is in flight.
  planner.observe('whk_b', 'timed-out');
  const ticket = planner.releaseForRecording(times('whk_a', 2), 1)!;
  assert.equal(ticket.knownDue, true);
  assert.equal(ticket.plan.allowances.get('whk_a'), 2);
  assert.equal(ticket.plan.allowances.get('whk_b'), 0);
  assert.equal(ticket.plan.limit, 16 - 3 - 2);
  const result = planner.claimed(ticket, times('whk_a', 2));
  assert.equal(result.capped, true);
  // Capped again: wake-ups naming only it are skipped, as after the loop's own claim.
  assert.equal(planner.wake(new Set(['whk_a'])), false);
});
