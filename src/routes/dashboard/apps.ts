import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { appPage, appsPage, confirmPage, secretPage } from '../../dashboard/app-pages.ts';
import { generateApiKey, revokeKey } from '../../services/api-keys.ts';
import { createApplication, getApplication, listApplications, updateApplication } from '../../services/applications.ts';
import type { ServiceDeps } from '../../services/deps.ts';
import { applicationFunnel } from '../../services/funnel.ts';
import { audit, memberPrincipal } from '../../services/members.ts';
import { createEndpoint, listEndpointsFor } from '../../services/webhooks.ts';
import { authorize, dashboardRoute, field, fields, seeOther, signedIn, type MemberContext } from './context.ts';

/** Records a member's action in the audit log, in the environment they act in. */
export function recordAction(deps: ServiceDeps, ctx: MemberContext, action: string, target: string) {
  const { member, environment } = ctx.session;
  return audit(deps, { orgId: member.orgId, actor: member.id, action, target, environment });
}

const param = (request: FastifyRequest, name: string) => (request.params as Record<string, string>)[name]!;
const after = (request: FastifyRequest) => (request.query as { after?: string }).after || undefined;

/** Applications, their keys and the creation of endpoints: through the services the API uses. */
export const appRoutes =
  (deps: ServiceDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/dashboard/apps',
      dashboardRoute(deps, 'apps', async (request) => {
        const ctx = await signedIn(deps, request);
        const page = await listApplications(deps, memberPrincipal(ctx.session), {
          limit: 50,
          startingAfter: after(request),
        });
        const apps = page.items.filter((a) => a.environment === ctx.session.environment);
        return appsPage(ctx, apps, page.nextCursor);
      }),
    );

    app.post(
      '/dashboard/apps',
      dashboardRoute(deps, 'apps', async (request, reply) => {
        const ctx = await authorize(deps, request, 'application.create');
        const created = await createApplication(deps, memberPrincipal(ctx.session), {
          name: field(request, 'name'),
          description: field(request, 'description') || null,
          environment: ctx.session.environment,
        });
        await recordAction(deps, ctx, 'application.create', created.id);
        return seeOther(reply, `/dashboard/apps/${created.id}`);
      }),
    );

    app.get(
      '/dashboard/apps/:appId',
      dashboardRoute(deps, 'apps', async (request) => {
        const ctx = await signedIn(deps, request);
        const principal = memberPrincipal(ctx.session);
        const appId = param(request, 'appId');
        const [details, funnel, endpoints] = await Promise.all([
          getApplication(deps, principal, appId),
          applicationFunnel(deps, principal, appId),
          listEndpointsFor(deps, principal, { appId }, { limit: 100 }),
        ]);
        return appPage(ctx, details, funnel, endpoints.items);
      }),
    );

    app.post(
      '/dashboard/apps/:appId/origins',
      dashboardRoute(deps, 'apps', async (request, reply) => {
        const ctx = await authorize(deps, request, 'application.update');
        const appId = param(request, 'appId');
        const origins = field(request, 'origins')
          .split(/[\s,]+/)
          .filter((o) => o !== '');
        await updateApplication(deps, memberPrincipal(ctx.session), appId, { allowedReturnOrigins: origins });
        await recordAction(deps, ctx, 'application.update', appId);
        return seeOther(reply, `/dashboard/apps/${appId}`);
      }),
    );

    app.post(
      '/dashboard/apps/:appId/keys',
      dashboardRoute(deps, 'apps', async (request) => {
        const ctx = await authorize(deps, request, 'key.create');
        const appId = param(request, 'appId');
        const key = await generateApiKey(deps, memberPrincipal(ctx.session), {
          appId,
          name: field(request, 'name'),
          environment: ctx.session.environment,
        });
        await recordAction(deps, ctx, 'key.create', key.id);
        return secretPage(ctx, `API key ${key.name} created`, key.rawSecret, `/dashboard/apps/${appId}`);
      }),
    );

    app.get(
      '/dashboard/keys/:keyId/revoke',
      dashboardRoute(deps, 'apps', async (request) => {
        const ctx = await signedIn(deps, request);
        const keyId = param(request, 'keyId');
        const appId = (request.query as { app?: string }).app ?? '';
        return confirmPage(
          ctx,
          'Revoke key',
          `Key ${keyId} stops working at once, for every request. This cannot be undone.`,
          `/dashboard/keys/${keyId}/revoke?app=${encodeURIComponent(appId)}`,
          appId ? `/dashboard/apps/${appId}` : '/dashboard/apps',
        );
      }),
    );

    app.post(
      '/dashboard/keys/:keyId/revoke',
      dashboardRoute(deps, 'apps', async (request, reply) => {
        const ctx = await authorize(deps, request, 'key.revoke');
        const revoked = await revokeKey(deps, memberPrincipal(ctx.session), param(request, 'keyId'));
        await recordAction(deps, ctx, 'key.revoke', revoked.id);
        const appId = (request.query as { app?: string }).app;
        return seeOther(reply, appId ? `/dashboard/apps/${encodeURIComponent(appId)}` : '/dashboard/apps');
      }),
    );

    app.post(
      '/dashboard/apps/:appId/webhooks',
      dashboardRoute(deps, 'apps', async (request) => {
        const ctx = await authorize(deps, request, 'webhook.create');
        const endpoint = await createEndpoint(deps, memberPrincipal(ctx.session), {
          appId: param(request, 'appId'),
          url: field(request, 'url'),
          events: fields(request, 'events'),
        });
        await recordAction(deps, ctx, 'webhook.create', endpoint.id);
        return secretPage(
          ctx,
          'Endpoint added: its signing secret',
          endpoint.secret,
          `/dashboard/webhooks/${endpoint.id}`,
        );
      }),
    );
  };
