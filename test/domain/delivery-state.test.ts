import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  canDeliveryTransition,
  CLAIMABLE,
  DELIVERY_STATUSES,
  DELIVERY_TRANSITIONS,
  deliveryStatusesLeadingTo,
  REQUEUEABLE,
} from '../../src/domain/delivery-state.ts';

test('the delivery transition table: claims, outcomes, lease take-over and manual retries', () => {
  assert.deepEqual(DELIVERY_TRANSITIONS, {
    pending: ['sending', 'pending'],
    sending: ['pending', 'sending', 'succeeded', 'failed'],
    succeeded: ['pending'],
    failed: ['pending'],
  });
  assert.deepEqual(Object.keys(DELIVERY_TRANSITIONS).sort(), [...DELIVERY_STATUSES].sort());
});

test('final outcomes are reached only from sending: only an attempt decides them', () => {
  assert.deepEqual(deliveryStatusesLeadingTo('succeeded'), ['sending']);
  assert.deepEqual(deliveryStatusesLeadingTo('failed'), ['sending']);
  assert.equal(canDeliveryTransition('pending', 'succeeded'), false);
  assert.equal(canDeliveryTransition('failed', 'succeeded'), false);
});

test('the guards the store uses come from the table', () => {
  // A sending delivery is claimable again once its lease ran out (its worker died).
  assert.deepEqual([...CLAIMABLE].sort(), ['pending', 'sending']);
  // A manual retry never touches the attempt in flight.
  assert.deepEqual([...REQUEUEABLE].sort(), ['failed', 'pending', 'succeeded']);
});
