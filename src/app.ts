import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyInstance } from 'fastify';
import { newId } from './domain/ids.ts';
import { authenticate } from './http/auth.ts';
import { installErrorHandling } from './http/error-handler.ts';
import { installIdempotency } from './http/idempotency.ts';
import { ErrorBody } from './http/schemas.ts';
import { adminRoutes } from './routes/admin.ts';
import { appRoutes } from './routes/apps.ts';
import { eventRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { keyRoutes } from './routes/keys.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { portalRoutes } from './routes/portal.ts';
import { sandboxWalletRoutes } from './routes/sandbox-wallet.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { verifyRoutes } from './routes/verify.ts';
import { walletRoutes } from './routes/wallet.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import type { ServiceDeps } from './services/deps.ts';
import type { Store } from './store/db.ts';

export interface AppDeps {
  /** The database and its pool (health checks); the use cases reach it through `services`. */
  store: Store;
  /** The service dependencies, built once by the composition root (services/deps.ts). */
  services: ServiceDeps;
  /** Logger options or false; the composition root decides. */
  logger?: boolean | { level: string };
}

/**
 * Two validators: bodies are checked strictly (no type coercion, unknown fields rejected), while
 * query strings and path parameters, which arrive as text, may be coerced ("20" → 20).
 */
function installValidation(app: FastifyInstance): void {
  const options = { allErrors: false, removeAdditional: false, useDefaults: true, strict: false } as const;
  const bodyAjv = addFormats.default(new Ajv.default({ ...options, coerceTypes: false }));
  const textAjv = addFormats.default(new Ajv.default({ ...options, coerceTypes: 'array' }));
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema));
}

function requiresBearer(security: unknown): boolean {
  return (
    Array.isArray(security) && security.some((entry) => entry && typeof entry === 'object' && 'bearerAuth' in entry)
  );
}

/** Builds the HTTP application over the given dependencies. No I/O beyond them, no process.env. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { store, services } = deps;
  const { clock, config } = services;
  const app = Fastify({
    logger: deps.logger ?? { level: config.logLevel },
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => newId('request'),
    requestIdHeader: false,
    ajv: { customOptions: { removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  installValidation(app);
  installErrorHandling(app);
  app.addSchema(ErrorBody);
  app.decorateRequest('principal', null);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // A route that documents bearer security enforces it: the OpenAPI document cannot drift from the code.
    if (requiresBearer(request.routeOptions.schema?.security))
      request.principal = await authenticate(store.db, request);
  });
  // Labelled by the route pattern, never the URL: ids and nonces stay out of the metrics.
  app.addHook('onResponse', async (request, reply) => {
    services.metrics.httpRequest({
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
    });
  });
  installIdempotency(app, { db: store.db, clock });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Matricula API',
        version: '1.0.0',
        description: 'Student verification: sessions, credentials and proofs, applications, API keys, webhooks.',
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'Secret API key sk_test_… or sk_live_…' },
          metricsToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'METRICS_TOKEN, when the operator set one (docs/operations.md)',
          },
          adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN (docs/operations.md)' },
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes(services));
  await app.register(metricsRoutes(services));
  await app.register(appRoutes(services));
  await app.register(keyRoutes(services));
  await app.register(sessionRoutes(services));
  await app.register(walletRoutes(services));
  await app.register(portalRoutes(services));
  await app.register(sandboxWalletRoutes(services));
  await app.register(verifyRoutes(services));
  await app.register(eventRoutes(services));
  await app.register(webhookRoutes(services));
  // The admin API exists only when the operator set ADMIN_TOKEN: otherwise /admin/v1 is a 404.
  const { adminToken } = config;
  if (adminToken) await app.register(adminRoutes({ ...services, config: { ...config, adminToken } }));
  return app;
}
