import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { docsUiOptions } from './portal/docs-theme.ts';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { authenticate, confirmPrincipal, recalledPrincipal } from './http/auth.ts';
import { installCors } from './http/cors.ts';
import { installDrain } from './http/drain.ts';
import { isDatabaseUnavailable } from './store/unavailable.ts';
import { frameworkErrors, installErrorHandling, MAX_PARAM_LENGTH } from './http/error-handler.ts';
import { installIdempotency } from './http/idempotency.ts';
import { installRateLimits } from './http/rate-limit.ts';
import { AccessLog, requestIdGenerator, requestLogger } from './http/request-log.ts';
import { installTextGuard } from './http/text-guard.ts';
import { completeDocument, type OpenApiDocument } from './http/openapi.ts';
import { adminRoutes } from './routes/admin.ts';
import { appRoutes } from './routes/apps.ts';
import { COMPONENT_SCHEMAS, WEBHOOK_EVENT_SCHEMAS } from './routes/components.ts';
import { dashboardRoutes } from './routes/dashboard/index.ts';
import { dropinRoutes } from './routes/dropin.ts';
import { eventRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { keyRoutes } from './routes/keys.ts';
import { landingRoutes } from './routes/landing.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { portalRoutes } from './routes/portal.ts';
import { sandboxStatusListRoutes } from './routes/sandbox-status-lists.ts';
import { sandboxWalletRoutes } from './routes/sandbox-wallet.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { verifyRoutes } from './routes/verify.ts';
import { walletRoutes } from './routes/wallet.ts';
import { openid4vpRoutes } from './routes/openid4vp.ts';
import { openid4vpDcApiRoutes } from './routes/openid4vp-dc-api.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { sandboxIdpRoutes } from './routes/sandbox-idp.ts';
import { universityLoginRoutes } from './routes/university-login.ts';
import type { ServiceDeps } from './services/deps.ts';
import { sessionCallAdmitted } from './services/session-calls.ts';
import type { Store } from './store/db.ts';
import { createLogger } from './logging.ts';
import { lazySerializerFactory, lazyValidator } from './http/lazy-compilers.ts';
import { installRouteOptions, routeOf } from './http/route-options.ts';

export interface AppDeps {
  /** The database and its pool (health checks); the use cases reach it through `services`. */
  store: Store;
  /** The service dependencies, built once by the composition root (services/deps.ts). */
  services: ServiceDeps;
  /** The process's logger (logging.ts createLogger), false for none; by default one from the config. */
  logger?: false | FastifyBaseLogger;
}

/**
 * Two validators: bodies are checked strictly (no type coercion, unknown fields rejected), while
 * query strings and path parameters, which arrive as text, may be coerced ("20" → 20).
 */
function installValidation(app: FastifyInstance, components: TSchema[]): void {
  // verbose: an error carries the offending value, so that a closed list can say which value it refused.
  const options = {
    allErrors: false,
    removeAdditional: false,
    useDefaults: true,
    strict: false,
    verbose: true,
  } as const;
  const bodyAjv = addFormats.default(new Ajv.default({ ...options, coerceTypes: false, schemas: components }));
  const textAjv = addFormats.default(new Ajv.default({ ...options, coerceTypes: 'array', schemas: components }));
  app.setValidatorCompiler(({ schema, httpPart }) =>
    lazyValidator(() => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema)),
  );
}

function requiresBearer(security: unknown): boolean {
  return (
    Array.isArray(security) && security.some((entry) => entry && typeof entry === 'object' && 'bearerAuth' in entry)
  );
}

/** TRUST_PROXY as Fastify takes it: a hop count becomes "trust the first n hops". */
function trustProxyOption(trust: boolean | number | string[]) {
  return typeof trust === 'number' ? (_address: string, hop: number) => hop < trust : trust;
}

/** Builds the HTTP application over the given dependencies. No I/O beyond them, no process.env. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { store, services } = deps;
  const { clock, config } = services;
  const logger = deps.logger ?? createLogger(config);
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : {}),
    // At most one line per request instead of two, with the nonce stripped; by default only for
    // failed answers, every request with ACCESS_LOG=true (http/request-log.ts).
    logController: new AccessLog({ everyRequest: config.accessLog }),
    // A request's pino child is made on its first line, and most requests write none.
    childLoggerFactory: requestLogger,
    bodyLimit: config.bodyLimitBytes,
    // Which X-Forwarded-For to believe for request.ip, the key of the per-address rate limits.
    trustProxy: trustProxyOption(config.trustProxy),
    genReqId: requestIdGenerator(config.trustProxyRequestId),
    requestIdHeader: false,
    ajv: { customOptions: { removeAdditional: false } },
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } },
    // Longer than any id, so that a schema's maxLength names the parameter; beyond it, a 400 envelope.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors,
    // A request arriving while closing gets the 503 envelope from installDrain, not Fastify's body.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();

  // The proof pool's threads stop with the app: a test that closes its app leaves nothing running.
  app.addHook('onClose', async () => services.close());
  // Under x509_hash every openid4vpUri names the request certificate's hash, and session answers
  // are built without waiting: the signer (the sandbox certificate, generated on first use) is
  // loaded before the first request.
  if (config.openid4vp.clientIdPrefix === 'x509_hash')
    app.addHook('onReady', async () => void (await services.requestSigner()));
  installValidation(app, COMPONENT_SCHEMAS);
  // A caller admitted under a recalled principal is confirmed before any error is answered to it.
  installErrorHandling(app, isDatabaseUnavailable, (request) =>
    request.keyToConfirm ? confirmPrincipal(services.keyLookups, request) : undefined,
  );
  installCors(app, config.corsOrigins);
  for (const schema of COMPONENT_SCHEMAS) app.addSchema(schema);
  installRouteOptions(app);
  app.decorateRequest('principal', null);
  app.decorateRequest('prefetchedSession', null);
  app.decorateRequest('keyToConfirm', null);

  // The hooks every request runs are callback-style where they have nothing to wait for: an async
  // hook costs a promise and a turn of the microtask queue per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // Before authentication: a request arriving while the server stops touches no database.
  installDrain(app);
  app.addHook('onRequest', (request, _reply, done) => {
    // A route that documents bearer security enforces it: the OpenAPI document cannot drift from the code.
    if (!requiresBearer(routeOf(request).schema?.security)) return done();
    // A route whose write confirms the key: no read when this process has seen the key before.
    request.principal = recalledPrincipal(services.keyLookups, request) ?? null;
    if (request.principal) return done();
    authenticate(services.keyLookups, request).then((principal) => {
      request.principal = principal;
      done();
    }, done);
  });
  // After authentication: a route with an API key is limited per key, one without per address.
  installRateLimits(app, {
    clock,
    limits: config.rateLimits,
    admit: (call) => sessionCallAdmitted(services, call),
  });
  installTextGuard(app);
  // Labelled by the route pattern, never the URL: ids and nonces stay out of the metrics.
  app.addHook('onResponse', (request, reply, done) => {
    services.metrics.httpRequest({
      method: request.method,
      route: routeOf(request).url ?? 'unmatched',
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
    });
    done();
  });
  installIdempotency(app, { db: store.db, clock });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Matricula API',
        version: '1.0.0',
        description: 'Student verification: sessions, credentials and proofs, applications, API keys, webhooks.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      tags: [
        { name: 'Verification sessions', description: 'Ask a student to prove they are one, and read the outcome' },
        { name: 'Applications', description: 'What your keys, sessions and webhooks belong to' },
        { name: 'API keys', description: 'Secret keys, per application and environment' },
        { name: 'Events', description: 'Everything that happened, as sent to webhooks' },
        { name: 'Webhooks', description: 'Endpoints that receive the events, and their deliveries' },
        { name: 'Wallet', description: 'What a student wallet calls; the session id and its nonce authorize' },
        {
          name: 'OpenID4VP',
          description:
            'OpenID for Verifiable Presentations 1.0: what a standard wallet calls (request_uri, response_uri); OAuth errors',
        },
        {
          name: 'University login',
          description:
            "SAML 2.0 and OpenID Connect: what the student's browser and the identity providers call (docs/university-login.md)",
        },
        { name: 'Portal', description: 'What the verification page calls' },
        { name: 'Sandbox wallet', description: 'Presentations of made-up students, for sandbox sessions' },
        {
          name: 'Sandbox status lists',
          description: 'The revocation lists of the sandbox universities (IETF Token Status List)',
        },
        { name: 'Health', description: 'Probes for the orchestrator' },
        { name: 'Operations', description: 'Metrics for the operator (METRICS_TOKEN)' },
      ],
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'Secret API key sk_test_… or sk_live_…' },
          metricsToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'METRICS_TOKEN, when the operator set one (docs/operations.md)',
          },
          // Declared only where the admin API exists (ADMIN_TOKEN set): an unused scheme is a lint error.
          ...(config.adminToken
            ? { adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN (docs/operations.md)' } }
            : {}),
        },
      },
    },
    transformObject: (documents) => {
      if (!('openapiObject' in documents)) return documents.swaggerObject;
      completeDocument(documents.openapiObject as OpenApiDocument, { webhooks: WEBHOOK_EVENT_SCHEMAS });
      return documents.openapiObject;
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, ...docsUiOptions() });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes(services));
  await app.register(metricsRoutes(services));
  await app.register(appRoutes(services));
  await app.register(keyRoutes(services));
  await app.register(sessionRoutes(services));
  await app.register(walletRoutes(services));
  await app.register(openid4vpRoutes(services));
  await app.register(openid4vpDcApiRoutes(services));
  await app.register(universityLoginRoutes(services));
  await app.register(sandboxIdpRoutes(services));
  await app.register(portalRoutes(services));
  await app.register(dropinRoutes);
  await app.register(dashboardRoutes(services));
  await app.register(landingRoutes);
  await app.register(sandboxWalletRoutes(services));
  await app.register(sandboxStatusListRoutes(services));
  await app.register(verifyRoutes(services));
  await app.register(eventRoutes(services));
  await app.register(webhookRoutes(services));
  // The admin API exists only when the operator set ADMIN_TOKEN: otherwise /admin/v1 is a 404.
  const { adminToken } = config;
  if (adminToken) await app.register(adminRoutes({ ...services, config: { ...config, adminToken } }));
  return app;
}

/**
 * The operations listener (METRICS_PORT): /metrics (behind METRICS_TOKEN when set), /healthz and
 * /readyz, nothing else. It is how a `worker` process, which serves no API, is scraped; in the
 * other roles it keeps the metrics off the public port's network path if the operator wants that.
 */
export async function buildOperationsApp(deps: AppDeps): Promise<FastifyInstance> {
  const { services } = deps;
  const logger = deps.logger ?? createLogger(services.config);
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : {}),
    logController: new AccessLog({ everyRequest: services.config.accessLog }),
    childLoggerFactory: requestLogger,
    genReqId: requestIdGenerator(false),
    requestIdHeader: false,
    frameworkErrors,
    return503OnClosing: false,
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  installValidation(app, COMPONENT_SCHEMAS);
  installErrorHandling(app, isDatabaseUnavailable);
  installRouteOptions(app);
  // The error answers reference the shared component schemas (ErrorResponse).
  for (const schema of COMPONENT_SCHEMAS) app.addSchema(schema);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  await app.register(healthRoutes(services));
  await app.register(metricsRoutes(services));
  return app;
}
