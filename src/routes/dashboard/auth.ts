import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { accountPage, invitationPage, signInPage } from '../../dashboard/auth-pages.ts';
import { FixedWindowLimiter } from '../../domain/rate-limit.ts';
import { isEnvironment } from '../../domain/environment.ts';
import { normalizedEmail } from '../../domain/members.ts';
import { ApiError } from '../../errors.ts';
import type { ServiceDeps } from '../../services/deps.ts';
import {
  acceptInvitation,
  DASHBOARD_SESSION_TTL_MS,
  openInvitation,
  signInWithPassword,
  signOut,
  startDashboardSession,
  switchEnvironment,
} from '../../services/members.ts';
import { passkeyCount } from '../../services/passkeys.ts';
import {
  authorize,
  checkOrigin,
  cookieNames,
  dashboardRoute,
  field,
  readCookie,
  seeOther,
  sendDashboardPage,
  setSessionCookie,
  signedIn,
} from './context.ts';

/** Sign-in attempts a minute, per client address and per e-mail address (each counted apart). */
export const SIGN_IN_ATTEMPTS_PER_MINUTE = 10;
const SIGN_IN_CSRF_COOKIE = 'matricula_sign_in';

/** Sign-in (password), invitations, sign-out, the environment switch, the account page. */
export const authRoutes =
  (deps: ServiceDeps): FastifyPluginAsync =>
  async (app) => {
    const names = cookieNames(deps.config);
    const byAddress = new FixedWindowLimiter(deps.clock, SIGN_IN_ATTEMPTS_PER_MINUTE, 60_000);
    const byEmail = new FixedWindowLimiter(deps.clock, SIGN_IN_ATTEMPTS_PER_MINUTE, 60_000);

    /** Login CSRF: a random value in a cookie and in the form must match (double submit). */
    function signInCsrf(request: FastifyRequest, reply: FastifyReply): string {
      const existing = readCookie(request, SIGN_IN_CSRF_COOKIE);
      if (existing && /^[\w-]{43}$/.test(existing)) return existing;
      const value = randomBytes(32).toString('base64url');
      reply.header(
        'set-cookie',
        `${SIGN_IN_CSRF_COOKIE}=${value}; Path=/dashboard; HttpOnly; SameSite=Strict${names.secure ? '; Secure' : ''}`,
      );
      return value;
    }

    const signIn = async (reply: FastifyReply, token: string) => {
      setSessionCookie(reply, names, token, DASHBOARD_SESSION_TTL_MS / 1000);
      return seeOther(reply, '/dashboard/apps');
    };

    app.get('/dashboard', async (_request, reply) => seeOther(reply, '/dashboard/apps'));

    app.get(
      '/dashboard/sign-in',
      dashboardRoute(deps, 'account', async (request, reply) =>
        sendDashboardPage(reply, 200, signInPage({ signInCsrf: signInCsrf(request, reply) })),
      ),
    );

    app.post(
      '/dashboard/sign-in',
      dashboardRoute(deps, 'account', async (request, reply) => {
        checkOrigin(deps, request);
        const expected = readCookie(request, SIGN_IN_CSRF_COOKIE);
        const email = normalizedEmail(field(request, 'email'));
        if (!expected || field(request, '_csrf') !== expected)
          throw new ApiError('forbidden', 'This form has expired. Reload the page and try again.');
        for (const decision of [byAddress.take(`ip:${request.ip}`), byEmail.take(`email:${email}`)]) {
          if (!decision.allowed)
            throw new ApiError('rate_limited', `Too many sign-in attempts. Retry in ${decision.retryAfterSeconds} s.`, {
              retryAfterSeconds: decision.retryAfterSeconds,
            });
        }
        const member = await signInWithPassword(deps, email, field(request, 'password'));
        if (!member)
          return sendDashboardPage(
            reply,
            401,
            signInPage({ signInCsrf: expected, email, error: 'That e-mail address and password do not match.' }),
          );
        return signIn(reply, await startDashboardSession(deps, member));
      }),
    );

    const tokenOf = (request: FastifyRequest) => (request.params as { token: string }).token;
    app.get(
      '/dashboard/invitations/:token',
      dashboardRoute(deps, 'account', async (request, reply) => {
        const invitation = await openInvitation(deps, tokenOf(request));
        return sendDashboardPage(reply, 200, invitationPage(invitation));
      }),
    );

    app.post(
      '/dashboard/invitations/:token',
      dashboardRoute(deps, 'account', async (request, reply) => {
        // The link's unguessable token is the proof: a forged request cannot know it.
        checkOrigin(deps, request);
        const token = tokenOf(request);
        const invitation = await openInvitation(deps, token);
        try {
          const member = await acceptInvitation(deps, token, field(request, 'password'));
          return await signIn(reply, await startDashboardSession(deps, member));
        } catch (error) {
          if (!(error instanceof ApiError) || error.code !== 'invalid_request') throw error;
          return sendDashboardPage(reply, 400, invitationPage({ ...invitation, error: error.message }));
        }
      }),
    );

    app.post(
      '/dashboard/sign-out',
      dashboardRoute(deps, 'account', async (request, reply) => {
        const ctx = await authorize(deps, request, 'view');
        await signOut(deps, ctx.session);
        setSessionCookie(reply, names, null);
        return seeOther(reply, '/dashboard/sign-in');
      }),
    );

    app.post(
      '/dashboard/environment',
      dashboardRoute(deps, 'apps', async (request, reply) => {
        const ctx = await authorize(deps, request, 'view');
        const environment = field(request, 'environment');
        if (!isEnvironment(environment)) throw new ApiError('invalid_request', 'Choose sandbox or live.');
        await switchEnvironment(deps, ctx.session, environment);
        return seeOther(reply, '/dashboard/apps');
      }),
    );

    app.get(
      '/dashboard/account',
      dashboardRoute(deps, 'account', async (request) => {
        const ctx = await signedIn(deps, request);
        return accountPage(ctx, await passkeyCount(deps, ctx.session.member.id));
      }),
    );
  };
