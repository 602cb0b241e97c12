import type { ClaimedDelivery } from '../store/webhook-deliveries/claim.ts';

/**
 * The sends of one worker under way per endpoint, at most `maxPerEndpoint` at once: a delivery
 * claimed ahead (domain/claim-plan.ts) waits here for one of its endpoint's sends to end, and goes
 * then, with no claim in between.
 */
export class EndpointSends {
  readonly #maxPerEndpoint: number;
  /** Per endpoint: the sends under way, and the deliveries waiting for one of them to end. */
  readonly #endpoints = new Map<string, { sending: number; waiting: Array<() => void> }>();
  /** The deliveries holding a send of their endpoint, each freed once. */
  readonly #holding = new Set<ClaimedDelivery>();

  constructor(maxPerEndpoint: number) {
    this.#maxPerEndpoint = maxPerEndpoint;
  }

  /** Undefined when `delivery` may be sent now, else a promise that resolves when it may. */
  start(delivery: ClaimedDelivery): Promise<void> | undefined {
    const endpointId = delivery.endpoint.id;
    let sends = this.#endpoints.get(endpointId);
    if (!sends) this.#endpoints.set(endpointId, (sends = { sending: 0, waiting: [] }));
    this.#holding.add(delivery);
    if (sends.sending < this.#maxPerEndpoint) {
      sends.sending++;
      return undefined;
    }
    // The send that ends hands its place over (end): the count stays.
    return new Promise((resolve) => sends.waiting.push(resolve));
  }

  /** The send of `delivery` is over (answered, failed or never made): the next waiting one goes. */
  end(delivery: ClaimedDelivery): void {
    if (!this.#holding.delete(delivery)) return;
    const endpointId = delivery.endpoint.id;
    const sends = this.#endpoints.get(endpointId);
    if (!sends) return;
    const next = sends.waiting.shift();
    if (next) return next();
    sends.sending--;
    if (sends.sending === 0) this.#endpoints.delete(endpointId);
  }
}
