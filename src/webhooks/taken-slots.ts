import type { ClaimedDelivery } from '../store/webhook-deliveries/claim.ts';

/**
 * The deliveries whose slots a worker has taken, by claim token and id (a worker may claim a
 * delivery again once its lease ran out). A slot is freed once: when the attempt is handed to a
 * recording that may claim with it (claim-with-recording), else when it is recorded or given up.
 */
export class TakenSlots {
  readonly #slots = new Map<string, ClaimedDelivery>();

  take(deliveries: readonly ClaimedDelivery[]): void {
    for (const delivery of deliveries) this.#slots.set(slotKey(delivery.leaseToken, delivery.id), delivery);
  }

  /** Frees the slot of delivery `deliveryId` claimed under `token`: its delivery, or undefined if freed already. */
  free(token: string, deliveryId: string): ClaimedDelivery | undefined {
    const key = slotKey(token, deliveryId);
    const delivery = this.#slots.get(key);
    this.#slots.delete(key);
    return delivery;
  }
}

function slotKey(token: string, deliveryId: string): string {
  return `${token} ${deliveryId}`;
}
