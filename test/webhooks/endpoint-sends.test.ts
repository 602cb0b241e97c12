import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClaimedDelivery } from '../../src/store/webhook-deliveries/claim.ts';
import { EndpointSends } from '../../src/webhooks/endpoint-sends.ts';

/** The sends per endpoint of one worker (no database): who goes now, who waits, and who goes not at all once closed. */

const delivery = (id: string, endpointId: string) => ({ id, endpoint: { id: endpointId } }) as ClaimedDelivery;

/** Whether `turn` has settled, and how, after the microtasks queued so far. */
async function settledAs(turn: Promise<boolean>): Promise<boolean | 'waiting'> {
  return Promise.race([turn, new Promise<'waiting'>((resolve) => setImmediate(() => resolve('waiting')))]);
}

test('an endpoint sends at most its cap at once; a send that ends lets the next waiting one go', async () => {
  const sends = new EndpointSends(2);
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((id) => delivery(id, 'e1'));
  assert.equal(sends.start(a!), undefined);
  assert.equal(sends.start(b!), undefined);
  const third = sends.start(c!)!;
  const fourth = sends.start(d!)!;
  // Another endpoint is not held up by the first one's cap.
  assert.equal(sends.start(delivery('x', 'e2')), undefined);
  assert.equal(await settledAs(third), 'waiting');
  sends.end(a!);
  assert.equal(await settledAs(third), true);
  assert.equal(await settledAs(fourth), 'waiting');
  // Ending twice frees one place, not two.
  sends.end(a!);
  assert.equal(await settledAs(fourth), 'waiting');
  sends.end(b!);
  assert.equal(await settledAs(fourth), true);
});

test('closed, nothing waits: the waiting are told not to go, a delivery that would wait goes not at all', async () => {
  const sends = new EndpointSends(1);
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((id) => delivery(id, 'e1'));
  assert.equal(sends.start(a!), undefined);
  const waiting = sends.start(b!)!;
  sends.close();
  assert.equal(await settledAs(waiting), false);
  // Claimed after the close (a claim that rode in a recording under way): it would wait, so it does not go.
  assert.equal(await settledAs(sends.start(c!)!), false);
  // The one told not to go holds no place: ending it lets nothing through and takes nothing away.
  sends.end(b!);
  assert.equal(await settledAs(sends.start(d!)!), false);
  // Once the send under way ends, its endpoint's place is free again: a delivery now goes at once.
  sends.end(a!);
  assert.equal(sends.start(d!), undefined);
});
