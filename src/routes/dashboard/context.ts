import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { dashboardPage, notice, publicPage, type PageContext, type Section } from '../../dashboard/layout.ts';
import { may, type DashboardAction } from '../../domain/members.ts';
import { ApiError } from '../../errors.ts';
import { html, SafeHtml } from '../../portal/html.ts';
import { sendPage } from '../../portal/layout.ts';
import type { ServiceDeps } from '../../services/deps.ts';
import { csrfTokenMatches, csrfTokenOf, dashboardSession } from '../../services/members.ts';

/**
 * What every dashboard route shares: the session cookie, the CSRF check, the role check, and how a
 * refusal or a fault becomes a page. Cookies are HttpOnly and SameSite=Lax, and Secure with the
 * `__Host-` prefix unless the service runs on http://localhost (a browser drops a Secure cookie
 * over plain http, and development runs there).
 */
export interface CookieNames {
  session: string;
  secure: boolean;
}

export function cookieNames(config: Pick<Config, 'baseUrl'>): CookieNames {
  const url = new URL(config.baseUrl);
  const local = url.protocol === 'http:' && url.hostname === 'localhost';
  return { session: local ? 'matricula_dashboard' : '__Host-matricula_dashboard', secure: !local };
}

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

export function setSessionCookie(reply: FastifyReply, names: CookieNames, token: string | null, maxAgeSeconds = 0) {
  const attributes = ['Path=/', 'HttpOnly', 'SameSite=Lax', ...(names.secure ? ['Secure'] : [])];
  const value = token === null ? `${names.session}=; Max-Age=0` : `${names.session}=${token}; Max-Age=${maxAgeSeconds}`;
  reply.header('set-cookie', [value, ...attributes].join('; '));
}

/**
 * Sends a dashboard page. Its Referrer-Policy is same-origin, not the portal's no-referrer: with
 * no-referrer a browser sends `Origin: null` on the dashboard's own form posts, and the Origin is
 * one of the two checks against cross-site requests. Nothing secret is in a dashboard URL.
 */
export function sendDashboardPage(reply: FastifyReply, status: number, page: SafeHtml): FastifyReply {
  return sendPage(reply, status, page, { referrerPolicy: 'same-origin' });
}

/** Thrown where a page needs a signed-in member and there is none: the answer is the sign-in page. */
export class NotSignedIn extends Error {}

export interface MemberContext extends PageContext {
  token: string;
}

/** The signed-in member of this request, or NotSignedIn. */
export async function signedIn(deps: ServiceDeps, request: FastifyRequest): Promise<MemberContext> {
  const token = readCookie(request, cookieNames(deps.config).session);
  const session = token ? await dashboardSession(deps, token) : undefined;
  if (!token || !session) throw new NotSignedIn();
  return { session, token, csrf: csrfTokenOf(token) };
}

/** The CSRF token a request presents: the form's `_csrf` field or the X-CSRF-Token header (scripts). */
function presentedCsrf(request: FastifyRequest): string {
  const header = request.headers['x-csrf-token'];
  if (typeof header === 'string') return header;
  const field = (request.body as Record<string, unknown> | undefined)?._csrf;
  return typeof field === 'string' ? field : '';
}

/**
 * A state change by a signed-in member: the request must come from our own pages (its Origin, when
 * the browser sends one, is ours, and it carries the session's CSRF token) and the member's role
 * must allow the action, decided here on the server whatever the page showed.
 */
export async function authorize(
  deps: ServiceDeps,
  request: FastifyRequest,
  action: DashboardAction,
): Promise<MemberContext> {
  const ctx = await signedIn(deps, request);
  checkOrigin(deps, request);
  if (!csrfTokenMatches(ctx.token, presentedCsrf(request)))
    throw new ApiError(
      'forbidden',
      'This form has expired or did not come from the dashboard. Reload the page and try again.',
    );
  if (!may(ctx.session.member.role, action))
    throw new ApiError('forbidden', `Your role (${ctx.session.member.role}) may not do this: ask an owner.`);
  return ctx;
}

export function checkOrigin(deps: ServiceDeps, request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== new URL(deps.config.baseUrl).origin)
    throw new ApiError('forbidden', 'Cross-site request refused.');
}

/** Form fields as strings (a repeated field: its first value; `all` gives every value). */
export function field(request: FastifyRequest, name: string): string {
  const value = (request.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : '';
}
export function fields(request: FastifyRequest, name: string): string[] {
  const value = (request.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v) => typeof v === 'string') : [];
}

export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.status(303).header('location', location).header('cache-control', 'no-store').send();
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | SafeHtml>;

/**
 * A dashboard route: its page, or, when it refuses, the refusal as a page with the API's status
 * (403 for a role or a CSRF token, 400 for a bad field, 404, 409…); no session: the sign-in page.
 */
export function dashboardRoute(deps: ServiceDeps, section: Section, handler: Handler) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    try {
      const result = await handler(request, reply);
      return result instanceof SafeHtml ? sendDashboardPage(reply, 200, result) : result;
    } catch (error) {
      if (error instanceof NotSignedIn) return seeOther(reply, '/dashboard/sign-in');
      if (!(error instanceof ApiError) || error.status >= 500) {
        request.log.error({ err: error }, 'dashboard page failed');
        return sendDashboardPage(
          reply,
          500,
          publicPage('Something went wrong', html`<h1>Something went wrong</h1><p>Request ${request.id}.</p>`),
        );
      }
      if (error.retryAfterSeconds) reply.header('retry-after', String(error.retryAfterSeconds));
      const ctx = await signedIn(deps, request).catch(() => undefined);
      const main = html`<h1>That did not work</h1>${notice(error.message, 'error')}<p><a href="/dashboard">Back to the dashboard</a></p>`;
      return sendDashboardPage(
        reply,
        error.status,
        ctx ? dashboardPage(ctx, section, 'Refused', main) : publicPage('Refused', main),
      );
    }
  };
}
