import type { ClaimedDelivery } from '../store/webhook-deliveries/claim.ts';

/**
 * The sends of one worker under way per endpoint, at most `maxPerEndpoint` at once: a delivery
 * claimed ahead (domain/claim-plan.ts) waits here for one of its endpoint's sends to end, and goes
 * then, with no claim in between. Once closed (the worker stops), nothing waits: a delivery that
 * would wait is told not to go, and given back by the worker.
 */
export class EndpointSends {
  readonly #maxPerEndpoint: number;
  /** Per endpoint: the sends under way, and the deliveries waiting for one of them to end. */
  readonly #endpoints = new Map<
    string,
    { sending: number; waiting: Array<{ delivery: ClaimedDelivery; go: (sent: boolean) => void }> }
  >();
  /** The deliveries holding a send of their endpoint, or waiting for one, each freed once. */
  readonly #holding = new Set<ClaimedDelivery>();
  #closed = false;

  constructor(maxPerEndpoint: number) {
    this.#maxPerEndpoint = maxPerEndpoint;
  }

  /**
   * Undefined when `delivery` may be sent now, else a promise of whether it may be sent: true once
   * a send of its endpoint ends, false if it must not be (closed: the worker stops).
   */
  start(delivery: ClaimedDelivery): Promise<boolean> | undefined {
    const endpointId = delivery.endpoint.id;
    let sends = this.#endpoints.get(endpointId);
    if (!sends) this.#endpoints.set(endpointId, (sends = { sending: 0, waiting: [] }));
    if (sends.sending < this.#maxPerEndpoint) {
      this.#holding.add(delivery);
      sends.sending++;
      return undefined;
    }
    if (this.#closed) return Promise.resolve(false);
    this.#holding.add(delivery);
    // The send that ends hands its place over (end): the count stays.
    return new Promise((go) => sends.waiting.push({ delivery, go }));
  }

  /** The send of `delivery` is over (answered, failed or never made): the next waiting one goes. */
  end(delivery: ClaimedDelivery): void {
    if (!this.#holding.delete(delivery)) return;
    const endpointId = delivery.endpoint.id;
    const sends = this.#endpoints.get(endpointId);
    if (!sends) return;
    const next = sends.waiting.shift();
    if (next) return next.go(true);
    sends.sending--;
    if (sends.sending === 0) this.#endpoints.delete(endpointId);
  }

  /** From now on nothing waits: every delivery waiting, and any that would, is told not to go. */
  close(): void {
    this.#closed = true;
    for (const sends of this.#endpoints.values())
      for (const { delivery, go } of sends.waiting.splice(0)) {
        this.#holding.delete(delivery);
        go(false);
      }
  }
}
