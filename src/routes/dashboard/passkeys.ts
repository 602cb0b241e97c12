import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { FixedWindowLimiter } from '../../domain/rate-limit.ts';
import { ApiError, invalidRequest } from '../../errors.ts';
import type { ServiceDeps } from '../../services/deps.ts';
import { DASHBOARD_SESSION_TTL_MS, startDashboardSession } from '../../services/members.ts';
import {
  authenticationOptions,
  registerPasskey,
  registrationOptions,
  signInWithPasskey,
} from '../../services/passkeys.ts';
import { SIGN_IN_ATTEMPTS_PER_MINUTE } from './auth.ts';
import { authorize, checkOrigin, cookieNames, setSessionCookie } from './context.ts';

/** The passkey ceremonies, as JSON for dashboard.js: register (signed in), sign in. */
export const passkeyRoutes =
  (deps: ServiceDeps): FastifyPluginAsync =>
  async (app) => {
    const names = cookieNames(deps.config);
    const byAddress = new FixedWindowLimiter(deps.clock, SIGN_IN_ATTEMPTS_PER_MINUTE, 60_000);
    const answer = (request: FastifyRequest) => {
      const body = request.body as { challengeId?: unknown; response?: unknown } | undefined;
      if (typeof body?.challengeId !== 'string' || !body.response || typeof body.response !== 'object')
        throw invalidRequest('Send {challengeId, response}.');
      return { challengeId: body.challengeId, response: body.response };
    };

    app.post('/dashboard/passkeys/register/options', async (request) => {
      const ctx = await authorize(deps, request, 'passkey.register');
      return registrationOptions(deps, ctx.session);
    });

    app.post('/dashboard/passkeys/register', async (request) => {
      const ctx = await authorize(deps, request, 'passkey.register');
      const { challengeId, response } = answer(request);
      await registerPasskey(deps, ctx.session, challengeId, response as RegistrationResponseJSON);
      return { success: true };
    });

    app.post('/dashboard/passkeys/sign-in/options', async (request) => {
      checkOrigin(deps, request);
      return authenticationOptions(deps);
    });

    app.post('/dashboard/passkeys/sign-in', async (request, reply) => {
      checkOrigin(deps, request);
      const decision = byAddress.take(`ip:${request.ip}`);
      if (!decision.allowed)
        throw new ApiError('rate_limited', `Too many sign-in attempts. Retry in ${decision.retryAfterSeconds} s.`, {
          retryAfterSeconds: decision.retryAfterSeconds,
        });
      const { challengeId, response } = answer(request);
      const member = await signInWithPasskey(deps, challengeId, response as AuthenticationResponseJSON);
      setSessionCookie(reply, names, await startDashboardSession(deps, member), DASHBOARD_SESSION_TTL_MS / 1000);
      return { success: true, location: '/dashboard/apps' };
    });
  };
