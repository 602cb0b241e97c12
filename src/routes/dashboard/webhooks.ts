import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { secretPage } from '../../dashboard/app-pages.ts';
import { endpointPage } from '../../dashboard/webhook-pages.ts';
import type { ServiceDeps } from '../../services/deps.ts';
import { memberPrincipal } from '../../services/members.ts';
import { replayFailedDeliveries } from '../../services/webhook-replay.ts';
import {
  endpointForCaller,
  listDeliveriesFor,
  retryDelivery,
  rotateSecret,
  sendTestEvent,
} from '../../services/webhooks.ts';
import { recordAction } from './apps.ts';
import { authorize, dashboardRoute, field, seeOther, signedIn } from './context.ts';

const param = (request: FastifyRequest, name: string) => (request.params as Record<string, string>)[name]!;

/** An endpoint's page: its deliveries and attempts, retry, replay, test event, secret rotation. */
export const webhookRoutes =
  (deps: ServiceDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/dashboard/webhooks/:id',
      dashboardRoute(deps, 'apps', async (request) => {
        const ctx = await signedIn(deps, request);
        const principal = memberPrincipal(ctx.session);
        const id = param(request, 'id');
        const query = request.query as { after?: string; done?: string };
        const endpoint = await endpointForCaller(deps, principal, id);
        const page = await listDeliveriesFor(
          deps,
          principal,
          id,
          {},
          { limit: 20, startingAfter: query.after || undefined },
        );
        return endpointPage(ctx, endpoint, page.items, page.nextCursor, query.done?.slice(0, 200));
      }),
    );

    app.post(
      '/dashboard/webhooks/:id/test',
      dashboardRoute(deps, 'apps', async (request, reply) => {
        const ctx = await authorize(deps, request, 'webhook.test');
        const delivery = await sendTestEvent(deps, memberPrincipal(ctx.session), param(request, 'id'));
        await recordAction(deps, ctx, 'webhook.test', delivery.id);
        return seeOther(reply, `/dashboard/webhooks/${param(request, 'id')}?done=Test+event+sent`);
      }),
    );

    app.post(
      '/dashboard/webhooks/:id/rotate-secret',
      dashboardRoute(deps, 'apps', async (request) => {
        const ctx = await authorize(deps, request, 'webhook.rotate_secret');
        const endpoint = await rotateSecret(deps, memberPrincipal(ctx.session), param(request, 'id'));
        await recordAction(deps, ctx, 'webhook.rotate_secret', endpoint.id);
        return secretPage(
          ctx,
          'New signing secret (the old one signs for 24 h more)',
          endpoint.secret,
          `/dashboard/webhooks/${endpoint.id}`,
        );
      }),
    );

    app.post(
      '/dashboard/webhooks/:id/deliveries/:deliveryId/retry',
      dashboardRoute(deps, 'apps', async (request, reply) => {
        const ctx = await authorize(deps, request, 'delivery.retry');
        const id = param(request, 'id');
        const delivery = await retryDelivery(deps, memberPrincipal(ctx.session), id, param(request, 'deliveryId'));
        await recordAction(deps, ctx, 'delivery.retry', delivery.id);
        return seeOther(reply, `/dashboard/webhooks/${id}?done=Retry+scheduled`);
      }),
    );

    app.post(
      '/dashboard/webhooks/:id/replay',
      dashboardRoute(deps, 'apps', async (request, reply) => {
        const ctx = await authorize(deps, request, 'delivery.replay');
        const id = param(request, 'id');
        // datetime-local sends no zone: the form says UTC.
        const since = field(request, 'since');
        const { requeued } = await replayFailedDeliveries(
          deps,
          memberPrincipal(ctx.session),
          id,
          since.endsWith('Z') ? since : `${since}Z`,
        );
        await recordAction(deps, ctx, 'delivery.replay', id);
        return seeOther(reply, `/dashboard/webhooks/${id}?done=${requeued}+failed+deliveries+replayed`);
      }),
    );
  };
