import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { PUBLIC } from '../http/schemas.ts';
import { sendPage } from '../portal/layout.ts';
import { messagePage } from '../portal/message-page.ts';
import { sandboxIdpPage } from '../portal/sandbox-idp-page.ts';
import type { ServiceDeps } from '../services/deps.ts';
import { spEndpoints } from '../services/sso/saml/service-provider.ts';
import {
  readSandboxLoginRequest,
  sandboxIdpMetadata,
  sandboxLoginResponse,
  SANDBOX_UNIVERSITY_NAME,
} from '../services/sso/sandbox-idp.ts';

/** The built-in sandbox identity provider (docs/university-login.md#sandbox): its metadata and its login page. */
export const sandboxIdpRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/sandbox/idp/v1/metadata', {
      schema: {
        tags: ['University login'],
        operationId: 'retrieveSandboxIdpMetadata',
        summary: 'SAML 2.0 metadata of the built-in sandbox identity provider (trusted for sandbox sessions only)',
        security: PUBLIC,
        response: {
          200: {
            description: 'md:EntityDescriptor',
            content: { 'application/samlmetadata+xml': { schema: Type.String() } },
          },
        },
      },
      handler: async (_request, reply) =>
        reply.header('content-type', 'application/samlmetadata+xml').send(await sandboxIdpMetadata(deps)),
    });

    app.get('/sandbox/idp/v1/sso', {
      schema: { hide: true },
      handler: async (request, reply) => {
        const rawQuery = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '';
        const read = await readSandboxLoginRequest(deps, rawQuery);
        if ('problem' in read)
          return sendPage(
            reply,
            400,
            messagePage({
              heading: 'This login request was not accepted',
              text: `${read.problem}.`,
              tone: 'failure',
              sandbox: true,
            }),
          );
        const [student, staff] = await Promise.all([
          sandboxLoginResponse(deps, read, 'student'),
          sandboxLoginResponse(deps, read, 'staff'),
        ]);
        return sendPage(
          reply,
          200,
          sandboxIdpPage({
            university: SANDBOX_UNIVERSITY_NAME,
            acsUrl: spEndpoints(deps.config.baseUrl).acsUrl,
            relayState: read.relayState,
            responses: { student, staff },
          }),
        );
      },
    });
  };
