import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import {
  auditPage,
  eventPage,
  eventsPage,
  membersPage,
  sessionPage,
  sessionsPage,
} from '../../dashboard/record-pages.ts';
import { isMemberRole } from '../../domain/members.ts';
import { SESSION_STATUSES, type SessionStatus } from '../../domain/session-state.ts';
import { invalidRequest } from '../../errors.ts';
import type { ServiceDeps } from '../../services/deps.ts';
import { eventForCaller, listEventsFor } from '../../services/events.ts';
import { auditLog, inviteMember, memberPrincipal, membersOf, removeMember } from '../../services/members.ts';
import { redactSessionForCaller } from '../../services/redaction.ts';
import { listSessionsFor, sessionForCaller, sessionView } from '../../services/sessions.ts';
import { recordAction } from './apps.ts';
import { authorize, dashboardRoute, field, seeOther, signedIn } from './context.ts';

const param = (request: FastifyRequest, name: string) => (request.params as Record<string, string>)[name]!;
const after = (request: FastifyRequest) => (request.query as { after?: string }).after || undefined;

/** Sessions, events, members and the audit log. */
export const recordRoutes =
  (deps: ServiceDeps): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/dashboard/sessions',
      dashboardRoute(deps, 'sessions', async (request) => {
        const ctx = await signedIn(deps, request);
        const wanted = (request.query as { status?: string }).status ?? '';
        const status = (SESSION_STATUSES as readonly string[]).includes(wanted) ? (wanted as SessionStatus) : undefined;
        const page = await listSessionsFor(
          deps,
          memberPrincipal(ctx.session),
          { status },
          { limit: 25, startingAfter: after(request) },
        );
        return sessionsPage(
          ctx,
          page.items.map((s) => sessionView(s, deps)),
          status ?? '',
          page.nextCursor,
        );
      }),
    );

    app.get(
      '/dashboard/sessions/:id',
      dashboardRoute(deps, 'sessions', async (request) => {
        const ctx = await signedIn(deps, request);
        const session = await sessionForCaller(deps, memberPrincipal(ctx.session), param(request, 'id'));
        return sessionPage(ctx, sessionView(session, deps), (request.query as { done?: string }).done?.slice(0, 100));
      }),
    );

    app.post(
      '/dashboard/sessions/:id/redact',
      dashboardRoute(deps, 'sessions', async (request, reply) => {
        const ctx = await authorize(deps, request, 'session.redact');
        const session = await redactSessionForCaller(deps, memberPrincipal(ctx.session), param(request, 'id'));
        await recordAction(deps, ctx, 'session.redact', session.id);
        return seeOther(reply, `/dashboard/sessions/${session.id}?done=Session+redacted`);
      }),
    );

    app.get(
      '/dashboard/events',
      dashboardRoute(deps, 'events', async (request) => {
        const ctx = await signedIn(deps, request);
        const page = await listEventsFor(
          deps,
          memberPrincipal(ctx.session),
          {},
          { limit: 25, startingAfter: after(request) },
        );
        return eventsPage(ctx, page.items, page.nextCursor);
      }),
    );

    app.get(
      '/dashboard/events/:id',
      dashboardRoute(deps, 'events', async (request) => {
        const ctx = await signedIn(deps, request);
        return eventPage(ctx, await eventForCaller(deps, memberPrincipal(ctx.session), param(request, 'id')));
      }),
    );

    app.get(
      '/dashboard/members',
      dashboardRoute(deps, 'members', async (request) => {
        const ctx = await signedIn(deps, request);
        const { members, invitations } = await membersOf(deps, ctx.session.member.orgId);
        return membersPage(ctx, members, invitations);
      }),
    );

    app.post(
      '/dashboard/members',
      dashboardRoute(deps, 'members', async (request) => {
        const ctx = await authorize(deps, request, 'member.invite');
        const role = field(request, 'role');
        if (!isMemberRole(role)) throw invalidRequest('role must be owner, developer or viewer.', 'role');
        const { url } = await inviteMember(deps, {
          orgId: ctx.session.member.orgId,
          email: field(request, 'email'),
          role,
          actor: ctx.session.member.id,
        });
        const { members, invitations } = await membersOf(deps, ctx.session.member.orgId);
        return membersPage(ctx, members, invitations, url);
      }),
    );

    app.post(
      '/dashboard/members/:id/remove',
      dashboardRoute(deps, 'members', async (request, reply) => {
        const ctx = await authorize(deps, request, 'member.remove');
        await removeMember(deps, ctx.session.member.orgId, param(request, 'id'), ctx.session.member.id);
        return seeOther(reply, '/dashboard/members');
      }),
    );

    app.get(
      '/dashboard/audit',
      dashboardRoute(deps, 'audit', async (request) => {
        const ctx = await signedIn(deps, request);
        const page = await auditLog(deps, ctx.session.member.orgId, { limit: 50, startingAfter: after(request) });
        return auditPage(ctx, page.items, page.nextCursor);
      }),
    );
  };
