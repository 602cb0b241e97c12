import type { Principal } from '../domain/principal.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import { requeueFailedSince } from '../store/webhook-deliveries/replay.ts';
import type { ServiceDeps } from './deps.ts';
import { endpointForCaller } from './webhooks.ts';

/**
 * Replays an endpoint's failed deliveries created since `since` (ISO 8601): each is due now, as
 * one more attempt, as a manual retry makes it. The workers are woken by the unit of work.
 */
export async function replayFailedDeliveries(
  deps: ServiceDeps,
  principal: Principal,
  endpointId: string,
  since: string,
): Promise<{ requeued: number }> {
  const endpoint = await endpointForCaller(deps, principal, endpointId);
  if (!endpoint.enabled)
    throw new ApiError('invalid_state', `Webhook endpoint ${endpoint.id} is disabled; enable it first.`);
  const at = Date.parse(since);
  if (Number.isNaN(at)) throw invalidRequest('since must be a date and time.', 'since');
  const now = deps.clock.now().toISOString();
  const requeued = await deps.unitOfWork(async (work) => {
    const n = await requeueFailedSince(work.db, endpoint.id, new Date(at).toISOString(), now);
    if (n > 0) work.deliveriesDue();
    return n;
  });
  return { requeued };
}
