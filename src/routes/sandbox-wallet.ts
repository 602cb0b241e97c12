import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isTerminal } from '../domain/session-state.ts';
import { ApiError } from '../errors.ts';
import { limitedPerSession } from '../http/rate-limit.ts';
import { envelope, errorResponses, POST_ERRORS, PUBLIC, Ref, StringEnum } from '../http/schemas.ts';
import { sendPage } from '../portal/layout.ts';
import { messagePage, notFoundPage } from '../portal/message-page.ts';
import { pageHandler, type PageResult } from '../portal/page-handler.ts';
import { parseQrPayload } from '../portal/qr-payload.ts';
import { walletAnswerPage, walletStartPage } from '../portal/wallet-page.ts';
import { installedHolderBuilders } from '../proofs/builders.ts';
import { offloadedBuilders } from '../proofs/worker/offload.ts';
import { SANDBOX_UNIVERSITIES } from '../proofs/sandbox-universities.ts';
import type { ServiceDeps } from '../services/deps.ts';
import {
  buildLimiter,
  buildSandboxPresentation,
  sandboxFormats,
  sandboxPresentationRequest,
} from '../services/sandbox-wallet.ts';
import { AcademicLevelEnum, FormatSchema } from './session-schemas.ts';

/** Presentations built at once per process (see buildLimiter). */
const MAX_CONCURRENT_BUILDS = 4;

const SandboxStudentSchema = Type.Object(
  {
    university: StringEnum(
      SANDBOX_UNIVERSITIES.map((u) => u.domain),
      { description: 'Domain of a sandbox university' },
    ),
    active: Type.Boolean({ description: 'false: a student who is no longer enrolled' }),
    academicLevel: Ref(AcademicLevelEnum),
    expired: Type.Boolean({ description: 'true: a credential whose validity ended yesterday' }),
  },
  { additionalProperties: false, $id: 'SandboxStudent', description: 'A made-up student of a sandbox university' },
);

const SandboxPresentation = Type.Object(
  {
    format: FormatSchema,
    presentation: Type.Unknown({
      description: "The value for the presentation endpoint's presentation field",
    }),
  },
  { $id: 'SandboxPresentation' },
);

export const SANDBOX_WALLET_COMPONENTS = [SandboxStudentSchema, SandboxPresentation];

const START_AGAIN = { href: '/wallet', label: 'Paste another QR payload' };

/** Why the sandbox wallet cannot answer a session, as a page. */
function refusalPage(error: ApiError): PageResult | undefined {
  const page = (heading: string, text: string) => ({
    status: error.status,
    page: messagePage({ heading, text, sandbox: true, link: START_AGAIN }),
  });
  switch (error.code) {
    case 'not_found':
      return page(
        'No session matches this QR payload',
        'The session id or its nonce is wrong. Copy the qrPayload again from the session the API returned.',
      );
    case 'session_expired':
      return page('This session has expired', 'Create a new session and answer it before it expires.');
    case 'forbidden':
      return page(
        'This is a live session',
        'The sandbox wallet answers sandbox sessions only: its credentials are signed with published test keys. Answer a live session with a real student wallet.',
      );
    default:
      return undefined;
  }
}

async function walletPage(
  deps: ServiceDeps,
  request: FastifyRequest<{ Querystring: { payload?: string } }>,
): Promise<PageResult> {
  const { appScheme } = deps.config;
  const payload = typeof request.query.payload === 'string' ? request.query.payload : undefined;
  if (payload === undefined || payload.trim() === '') return { status: 200, page: walletStartPage({ appScheme }) };
  const parsed = parseQrPayload(payload, appScheme);
  if (!parsed) {
    const error = `That is not a QR payload of this service. It looks like ${appScheme}://verify?session=sess_…&nonce=nonce_…`;
    return { status: 400, page: walletStartPage({ appScheme, payload, error }) };
  }
  try {
    const presentationRequest = await sandboxPresentationRequest(deps, parsed.sessionId, parsed.nonce);
    if (isTerminal(presentationRequest.status)) {
      const page = messagePage({
        heading: `This session is already ${presentationRequest.status}`,
        text: 'There is nothing left to answer. Create a new session to try again.',
        sandbox: true,
        link: START_AGAIN,
      });
      return { status: 409, page };
    }
    const formats = sandboxFormats(presentationRequest.acceptedFormats, await installedHolderBuilders());
    return { status: 200, page: walletAnswerPage(presentationRequest, formats) };
  } catch (error) {
    const refusal = error instanceof ApiError ? refusalPage(error) : undefined;
    if (refusal) return refusal;
    throw error;
  }
}

/**
 * The sandbox web wallet: its page, and the endpoint that builds a sandbox student's
 * presentation for it (the browser then submits it through the public wallet endpoints).
 */
export const sandboxWalletRoutes =
  (deps: ServiceDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const limited = buildLimiter(MAX_CONCURRENT_BUILDS);

    app.post('/wallet/sandbox/presentation', {
      // Bounded by MAX_CONCURRENT_BUILDS and the proof pool's queue; counted per session.
      config: limitedPerSession({ sessionId: 'body', nonce: 'body' }),
      schema: {
        tags: ['Sandbox wallet'],
        operationId: 'buildSandboxPresentation',
        summary: "Build a sandbox student's presentation for a sandbox session",
        security: PUBLIC,
        description:
          'No API key: the session id and its nonce authorize, as for the wallet endpoints. Sandbox sessions only (a live session is a 403). Builds, with the published sandbox issuer keys, a presentation of the chosen student that discloses the claims the session requires, bound to its nonce and audience. It does not submit it: the caller posts consent, then the presentation, to the public wallet endpoints.',
        body: Type.Object(
          {
            sessionId: Type.String({ maxLength: 64 }),
            nonce: Type.String({ minLength: 1, maxLength: 128 }),
            format: FormatSchema,
            student: Ref(SandboxStudentSchema),
          },
          {
            additionalProperties: false,
            examples: [
              {
                sessionId: 'sess_01jd8x4m2n5p6q7r8s9t0v1w2x',
                nonce: 'nonce_7f3a9c2e',
                format: 'sd-jwt-vc',
                student: {
                  university: SANDBOX_UNIVERSITIES[0].domain,
                  active: true,
                  academicLevel: 'undergraduate',
                  expired: false,
                },
              },
            ],
          },
        ),
        response: {
          200: envelope(Ref(SandboxPresentation)),
          ...errorResponses(
            ...POST_ERRORS,
            'forbidden',
            'not_found',
            'invalid_state',
            'session_expired',
            'rate_limited',
          ),
        },
      },
      handler: async (request) => ({
        success: true as const,
        data: await limited(async () =>
          buildSandboxPresentation(deps, request.body, offloadedBuilders(await installedHolderBuilders(), deps.proofs)),
        ),
      }),
    });

    app.get<{ Querystring: { payload?: string } }>(
      '/wallet',
      { schema: { hide: true } },
      pageHandler((request: FastifyRequest<{ Querystring: { payload?: string } }>) => walletPage(deps, request)),
    );
    app.get('/wallet/*', { schema: { hide: true } }, async (_request: FastifyRequest, reply: FastifyReply) =>
      sendPage(reply, 404, notFoundPage()),
    );
  };
