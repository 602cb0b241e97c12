import type { Principal } from '../domain/principal.ts';
import { SESSION_TTL } from '../domain/session-state.ts';
import { funnelDays, type FunnelDay } from '../store/funnel.ts';
import { applicationForCaller } from './access.ts';
import type { ServiceDeps } from './deps.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The verification funnel of an application, per UTC day, newest first: sessions created, consented,
 * completed verified and not verified, for the last `days` days. A day is final once every
 * session created in it has ended (its end plus the longest session lifetime), and is then read
 * from the aggregate (store/funnel.ts), not counted again.
 */
export async function applicationFunnel(
  deps: ServiceDeps,
  principal: Principal,
  appId: string,
  days = 14,
): Promise<FunnelDay[]> {
  const app = await applicationForCaller(deps.db, principal, appId, { param: 'appId' });
  const now = deps.clock.now().getTime();
  const list = Array.from({ length: days }, (_, i) => new Date(now - i * DAY_MS).toISOString().slice(0, 10));
  const closedBefore = new Date(now - SESSION_TTL.maxSeconds * 1000).toISOString().slice(0, 10);
  const counted = await funnelDays(deps.db, app.id, [...list].reverse(), closedBefore);
  return counted.reverse();
}
