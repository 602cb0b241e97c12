import type { FastifyInstance } from 'fastify';

/**
 * What the security suite (test/http/security.routes.test.ts) needs to call any operation of the
 * OpenAPI document: a resource for every path parameter and id field, a valid value for every
 * required field, and, for an operation that refers to no resource, why tenancy does not apply.
 * An operation this table cannot handle throws, with a message saying what to add here, so a new
 * route fails the suite until its security is checked.
 */

export type Environment = 'sandbox' | 'live';

/** One tenant's resources, one of each kind a route can refer to. */
export interface ResourceSet {
  environment: Environment;
  appId: string;
  keyId: string;
  sessionId: string;
  webhookId: string;
  deliveryId: string;
  eventId: string;
}

type Schema = Record<string, any>;

export interface Operation {
  /** `METHOD /path/{param}`, as in the document. */
  id: string;
  method: string;
  path: string;
  bearer: boolean;
  pathParams: string[];
  query: Array<{ name: string; required: boolean; schema: Schema }>;
  body?: Schema;
  /** Documented response statuses. */
  responses: string[];
  /** The 200 response is a paginated list. */
  isList: boolean;
}

/** Operations served without an API key, and what authorizes them instead. */
export const PUBLIC_OPERATIONS: Record<string, string> = {
  'GET /healthz': 'liveness probe',
  'GET /readyz': 'readiness probe',
  'GET /metrics': 'Prometheus scrape: METRICS_TOKEN when set (test/domain/metrics.test.ts), no tenant data',
  'GET /verification/v1/sessions/{sessionId}/status': 'portal page: the state of a session and nothing else',
  'GET /verification/v1/sessions/{sessionId}/request': 'wallet: the session id and its nonce',
  'POST /verification/v1/sessions/{sessionId}/consent': 'wallet: the session id and its nonce',
  'POST /verification/v1/sessions/{sessionId}/presentation': 'wallet: the session id and its nonce',
  'POST /wallet/sandbox/presentation': 'sandbox wallet: the session id and its nonce, sandbox sessions only',
  'GET /sandbox/status-lists/{domain}': 'a sandbox university status list: public by design, like any status list',
  'GET /openid4vp/v1/sessions/{sessionId}/request': 'OpenID4VP wallet: the request token of openid4vpUri',
  'POST /openid4vp/v1/sessions/{sessionId}/request': 'OpenID4VP wallet: the request token of openid4vpUri',
  'POST /openid4vp/v1/sessions/{sessionId}/response':
    'OpenID4VP wallet: the request token, then the nonce and key binding',
  'GET /openid4vp/v1/sessions/{sessionId}/dc-api/request':
    'the portal page, for the Digital Credentials API: the request token of openid4vpUri',
  'POST /openid4vp/v1/sessions/{sessionId}/dc-api/response':
    'the portal page, for the Digital Credentials API: the request token, then the nonce and key binding',
  'GET /openid4vp/v1/certificate': 'the public certificate that signs request objects',
  'GET /saml/v1/metadata': 'the SAML service provider metadata: public by design',
  'GET /sandbox/idp/v1/metadata': 'the sandbox identity provider metadata: public by design',
  'GET /sso/v1/sessions/{sessionId}/identity-providers': 'the portal: the session id, as for its page',
};

/** Routes the server answers that the document leaves out: pages for people, assets, the docs. */
export const UNDOCUMENTED_ROUTES = [
  'GET /',
  'GET /openapi.json',
  'GET /docs',
  'GET /docs/',
  'GET /docs/static/*',
  'GET /docs/json',
  'GET /docs/yaml',
  'GET /docs/static/index.html',
  'GET /docs/static/swagger-initializer.js',
  // The /docs theme (src/portal/docs-theme.ts): static files of the Swagger UI page.
  'GET /docs/static/theme/matricula.css',
  'GET /docs/static/theme/matricula.js',
  'GET /docs/static/theme/favicon.svg',
  'GET /verify',
  'GET /verify/*',
  'GET /verify/:sessionId',
  'GET /assets/:name',
  'GET /wallet',
  'GET /wallet/*',
  // The drop-in script (src/routes/dropin.ts).
  'GET /js/v1/matricula.js',
  // The dashboard's pages and forms (src/routes/dashboard/): cookie sessions, not keys; their own
  // security suite is test/dashboard/dashboard.test.ts (sign-in, CSRF, roles, tenancy).
  'GET /dashboard',
  'GET /dashboard/sign-in',
  'POST /dashboard/sign-in',
  'POST /dashboard/sign-out',
  'GET /dashboard/sessions',
  'GET /dashboard/sessions/:id',
  'POST /dashboard/sessions/:id/redact',
  'GET /dashboard/invitations/:token',
  'POST /dashboard/invitations/:token',
  'POST /dashboard/environment',
  'GET /dashboard/events',
  'GET /dashboard/events/:id',
  'GET /dashboard/account',
  'GET /dashboard/apps',
  'POST /dashboard/apps',
  'GET /dashboard/apps/:appId',
  'POST /dashboard/apps/:appId/origins',
  'POST /dashboard/apps/:appId/keys',
  'POST /dashboard/apps/:appId/webhooks',
  'GET /dashboard/audit',
  'POST /dashboard/passkeys/register',
  'POST /dashboard/passkeys/register/options',
  'POST /dashboard/passkeys/sign-in',
  'POST /dashboard/passkeys/sign-in/options',
  'GET /dashboard/keys/:keyId/revoke',
  'POST /dashboard/keys/:keyId/revoke',
  'GET /dashboard/webhooks/:id',
  'POST /dashboard/webhooks/:id/test',
  'POST /dashboard/webhooks/:id/rotate-secret',
  'POST /dashboard/webhooks/:id/replay',
  'POST /dashboard/webhooks/:id/deliveries/:deliveryId/retry',
  'GET /dashboard/members',
  'POST /dashboard/members',
  'POST /dashboard/members/:id/remove',
  'GET /sandbox/idp/v1/sso',
  // University login, visited by the student's browser (docs/university-login.md).
  'GET /sso/v1/sessions/:sessionId/start',
  'POST /saml/v1/acs',
  'GET /oidc/v1/callback',
];

/** Bearer operations that refer to no resource and take no environment, and why that is safe. */
export const UNSCOPED_OPERATIONS: Record<string, string> = {
  'GET /org/v1/apps': "lists the caller's own organization",
  'POST /verification/v1/verify':
    "checks a presentation against the trust registry of the key's environment; touches no resource",
};

/** Lists that show both environments of the organization (all its active applications). */
export const CROSS_ENVIRONMENT_LISTS = new Set(['GET /org/v1/apps']);

/** Path parameters and id fields the suite can fill: each names the resource of that kind in the set. */
export const REFERENCES = [
  'appId',
  'keyId',
  'sessionId',
  'webhookId',
  'deliveryId',
  'eventId',
] as const satisfies ReadonlyArray<keyof ResourceSet>;
type Reference = (typeof REFERENCES)[number];
const isKnownReference = (name: string): name is Reference => (REFERENCES as readonly string[]).includes(name);

/** A webhook target the test configuration accepts (OUTBOUND_ALLOW_PRIVATE_TARGETS); nothing is sent to it. */
export const WEBHOOK_URL = 'http://127.0.0.1:9/security-suite';

/** Values of body and query fields the schema alone cannot make valid. */
const FIELD_VALUES: Record<string, (r: ResourceSet) => unknown> = {
  environment: (r) => r.environment,
  name: () => 'security-suite',
  description: () => 'Made by the security suite',
  purpose: () => 'Security suite',
  requiredClaims: () => ['is_active_student'],
  url: () => WEBHOOK_URL,
  events: () => ['verification.completed'],
  format: () => 'sd-jwt-vc',
  presentation: () => 'not-a-presentation',
  nonce: () => 'nonce_security-suite',
};

const EXTEND = 'extend test/support/route-table.ts';

export function operationsOf(doc: { paths: Record<string, Record<string, Schema>> }): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const id = `${method.toUpperCase()} ${path}`;
      const security = op.security as unknown[] | undefined;
      const bearer = Array.isArray(security) && security.some((s) => s && typeof s === 'object' && 'bearerAuth' in s);
      const parameters = (op.parameters ?? []) as Array<{
        in: string;
        name: string;
        required?: boolean;
        schema: Schema;
      }>;
      const body = op.requestBody?.content?.['application/json']?.schema as Schema | undefined;
      if (op.requestBody && !body) throw new Error(`${id}: a request body that is not application/json; ${EXTEND}`);
      const ok = op.responses?.['200']?.content?.['application/json']?.schema as Schema | undefined;
      operations.push({
        id,
        method: method.toUpperCase(),
        path,
        bearer,
        pathParams: [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]),
        query: parameters
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, required: p.required === true, schema: p.schema })),
        body,
        responses: Object.keys(op.responses ?? {}),
        isList: Boolean(ok?.properties?.pagination),
      });
    }
  }
  return operations;
}

const isReference = (name: string) => /Ids?$/.test(name);

function reference(op: Operation, name: string, r: ResourceSet): string {
  if (!isKnownReference(name)) {
    throw new Error(
      `${op.id}: '${name}' names a resource the security suite does not create. Add it to ResourceSet and REFERENCES, and create one per tenant in createResources() (${EXTEND}).`,
    );
  }
  return r[name];
}

/** A value the schema accepts, for fields FIELD_VALUES does not list. */
function exampleOf(op: Operation, where: string, schema: Schema): unknown {
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.anyOf)) return exampleOf(op, where, schema.anyOf[0]);
  switch (schema.type) {
    case 'boolean':
      return true;
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'string':
      if (!schema.format && !schema.pattern) return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
      break;
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => exampleOf(op, where, schema.items ?? {}));
  }
  throw new Error(
    `${op.id}: no valid value for ${where} (${JSON.stringify(schema)}); add it to FIELD_VALUES (${EXTEND}).`,
  );
}

function fieldValue(op: Operation, name: string, schema: Schema, r: ResourceSet): unknown {
  if (isReference(name)) return reference(op, name, r);
  const known = FIELD_VALUES[name];
  return known ? known(r) : exampleOf(op, `field '${name}'`, schema);
}

/** Fields that carry tenancy: they are sent even when optional, so that the check runs. */
const carriesTenancy = (name: string) => isReference(name) || name === 'environment';

function bodyFor(op: Operation, r: ResourceSet): Record<string, unknown> | undefined {
  const schema = op.body;
  if (!schema) return undefined;
  if (schema.type !== 'object' || !schema.properties)
    throw new Error(`${op.id}: a body that is not an object of named fields; ${EXTEND}`);
  const properties = schema.properties as Record<string, Schema>;
  const body: Record<string, unknown> = {};
  for (const name of schema.required ?? []) body[name] = fieldValue(op, name, properties[name] ?? {}, r);
  for (const name of Object.keys(properties))
    if (!(name in body) && carriesTenancy(name)) body[name] = fieldValue(op, name, properties[name], r);
  // A body that must change something (PATCH): the first fields the table has values for.
  for (const name of Object.keys(properties)) {
    if (Object.keys(body).length >= (schema.minProperties ?? 0)) break;
    if (!(name in body) && FIELD_VALUES[name]) body[name] = FIELD_VALUES[name](r);
  }
  if (Object.keys(body).length < (schema.minProperties ?? 0))
    throw new Error(
      `${op.id}: cannot fill minProperties ${schema.minProperties}; add fields to FIELD_VALUES (${EXTEND}).`,
    );
  return body;
}

export interface OperationRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT';
  url: string;
  payload?: Record<string, unknown>;
}

/**
 * A valid request for `op` on the resources of `r`: path parameters and id fields name them, so
 * that only the caller's right to them decides the outcome. `references: false` leaves out the
 * optional id fields (a list of everything the caller may see).
 */
export function requestFor(op: Operation, r: ResourceSet, options: { references?: boolean } = {}): OperationRequest {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(reference(op, name, r)));
  const query = new URLSearchParams();
  for (const param of op.query) {
    if (param.required) query.set(param.name, String(fieldValue(op, param.name, param.schema, r)));
    else if (isReference(param.name) && options.references !== false)
      query.set(param.name, reference(op, param.name, r));
  }
  const search = query.toString();
  return {
    method: op.method as OperationRequest['method'],
    url: search ? `${path}?${search}` : path,
    payload: bodyFor(op, r),
  };
}

/**
 * How tenancy applies: `resource` when the request names a resource (another organization's is a
 * 404, the other environment's a 403); `environment` when it only names an environment (a 403);
 * `none` for the operations UNSCOPED_OPERATIONS explains.
 */
export function scopeOf(op: Operation): 'resource' | 'environment' | 'none' {
  const fields = [...Object.keys(op.body?.properties ?? {}), ...op.query.map((q) => q.name)];
  if (op.pathParams.length > 0 || fields.some(isReference)) return 'resource';
  if (fields.includes('environment')) return 'environment';
  if (UNSCOPED_OPERATIONS[op.id]) return 'none';
  throw new Error(
    `${op.id} names no resource and no environment: if tenancy really does not apply, say why in UNSCOPED_OPERATIONS (${EXTEND}).`,
  );
}

/** Path parameters that name resources: a request naming several may mix tenants. */
export const pathReferences = (op: Operation): string[] => op.pathParams.filter(isReference);

/** `r` with the resource `name` taken from `other`. */
export function withReference(r: ResourceSet, name: string, other: ResourceSet): ResourceSet {
  if (!isKnownReference(name)) throw new Error(`'${name}' is not in REFERENCES (${EXTEND}).`);
  return { ...r, [name]: other[name] };
}

/** The same resources with ids that exist nowhere. */
export function unknownResources(r: ResourceSet): ResourceSet {
  const unknown = (id: string) => `${id.slice(0, id.indexOf('_') + 1)}${'0'.repeat(26)}`;
  return {
    environment: r.environment,
    appId: unknown(r.appId),
    keyId: unknown(r.keyId),
    sessionId: unknown(r.sessionId),
    webhookId: unknown(r.webhookId),
    deliveryId: unknown(r.deliveryId),
    eventId: unknown(r.eventId),
  };
}

/** Every resource id of a set. */
export const idsOf = (r: ResourceSet): string[] => [
  r.appId,
  r.keyId,
  r.sessionId,
  r.webhookId,
  r.deliveryId,
  r.eventId,
];

/**
 * Every route the server answers (automatic HEAD routes left out), as its route tree prints them.
 * The tree is lossy for wildcards (it shows `/docs/static/*` as `*` under `/docs/`), so callers
 * compare counts and ask the router (`hasRoute`) about exact paths.
 */
export function printedRoutes(app: FastifyInstance): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    if (!line.trim()) continue;
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match)
      throw new Error(`cannot read the route tree line ${JSON.stringify(line)}: did fastify change printRoutes?`);
    const depth = match[1].length / 4;
    const path = (depth > 0 ? stack[depth - 1] : '') + match[2];
    stack.length = depth;
    stack.push(path);
    for (const method of match[3]?.split(', ') ?? []) if (method !== 'HEAD') routes.push(`${method} ${path}`);
  }
  return routes;
}

/** `/a/{b}` as the router spells it: `/a/:b`. */
export const routePath = (op: Operation): string => `${op.method} ${op.path.replace(/\{(\w+)\}/g, ':$1')}`;
