import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../scripts/openapi-document.ts';
import { CLAIM_CATALOGUE } from '../../src/domain/claims.ts';
import { ERROR_STATUS } from '../../src/errors.ts';
import { CREDENTIAL_FORMATS } from '../../src/domain/credentials.ts';
import { EVENT_TYPES } from '../../src/domain/events.ts';
import { FAILURE_REASONS } from '../../src/domain/session.ts';
import { SESSION_STATUSES } from '../../src/domain/session-state.ts';
import { PUBLIC_OPERATIONS } from '../support/route-table.ts';

/**
 * The OpenAPI document's promises to client generators (issue 14). It is the same document on
 * both databases, so it is built once, over SQLite, by the script `npm run lint:openapi` uses.
 */

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** The operations the brief names; the rest only need to exist and be unique. */
const EXPECTED_OPERATION_IDS: Record<string, string> = {
  'POST /verification/v1/sessions': 'createSession',
  'GET /verification/v1/sessions/{sessionId}': 'retrieveSession',
  'GET /verification/v1/sessions': 'listSessions',
  'POST /verification/v1/sessions/{sessionId}/cancel': 'cancelSession',
  'GET /org/v1/apps': 'listApps',
  'POST /org/v1/apps': 'createApp',
  'GET /org/v1/apps/{appId}': 'retrieveApp',
  'PATCH /org/v1/apps/{appId}': 'updateApp',
  'DELETE /org/v1/apps/{appId}': 'archiveApp',
  'POST /org/v1/keys': 'createKey',
  'GET /org/v1/keys': 'listKeys',
  'DELETE /org/v1/keys/{keyId}': 'revokeKey',
  'POST /verification/v1/verify': 'verifyPresentation',
  'GET /org/v1/events': 'listEvents',
  'GET /org/v1/events/{eventId}': 'retrieveEvent',
  'POST /org/v1/webhooks': 'createWebhookEndpoint',
};

/** Operations that answer no client error: requests without parameters. */
const PROBES = new Set(['GET /healthz', 'GET /readyz']);

function operations(doc: Json): Array<{ id: string; method: string; op: Json }> {
  const out: Array<{ id: string; method: string; op: Json }> = [];
  for (const [path, item] of Object.entries<Json>(doc.paths))
    for (const method of METHODS)
      if (item[method]) out.push({ id: `${method.toUpperCase()} ${path}`, method, op: item[method] });
  return out;
}

/** Every schema object in `node`, with where it is. */
function* schemasIn(node: unknown, where = '#'): Generator<[string, Json]> {
  if (!node || typeof node !== 'object') return;
  if (!Array.isArray(node)) yield [where, node as Json];
  for (const [key, value] of Object.entries(node)) yield* schemasIn(value, `${where}/${key}`);
}

const isSingleValue = (s: Json) => 'const' in s || (Array.isArray(s.enum) && s.enum.length === 1);

describe('OpenAPI document for generators', () => {
  let doc: Json;
  let schemas: Json;
  const resolve = (ref: string): Json => {
    assert.match(ref, /^#\/components\/schemas\//, `${ref} points into components.schemas`);
    const schema = schemas[ref.slice('#/components/schemas/'.length)];
    assert.ok(schema, `${ref} resolves`);
    return schema;
  };

  before(async () => {
    doc = await openApiDocument();
    schemas = doc.components.schemas;
  });

  test('every operation has a unique operationId, the named ones as named', () => {
    const seen = new Map<string, string>();
    const all = [
      ...operations(doc),
      ...Object.entries<Json>(doc.webhooks).map(([event, item]) => ({
        id: `webhook ${event}`,
        method: 'post',
        op: item.post,
      })),
    ];
    for (const { id, op } of all) {
      assert.equal(typeof op.operationId, 'string', `${id} has an operationId`);
      assert.match(op.operationId, /^[a-z][A-Za-z]+$/, `${id}: camelCase`);
      assert.ok(!seen.has(op.operationId), `${op.operationId} of ${id} is also ${seen.get(op.operationId)}`);
      seen.set(op.operationId, id);
    }
    for (const [id, operationId] of Object.entries(EXPECTED_OPERATION_IDS)) assert.equal(seen.get(operationId), id);
  });

  test('bearer operations declare 401; public ones say security: [] and are the known public set', () => {
    const publicIds: string[] = [];
    for (const { id, op } of operations(doc)) {
      const bearer = Array.isArray(op.security) && op.security.some((s: Json) => 'bearerAuth' in s);
      // Operator endpoints (metrics, admin) have their own token scheme, and a 401 for it.
      const operator =
        Array.isArray(op.security) && op.security.some((s: Json) => 'metricsToken' in s || 'adminToken' in s);
      if (operator) {
        // No API key: in the public set of the route security suite, with a 401 for its own token.
        assert.ok(op.responses['401'], `${id} declares 401`);
        publicIds.push(id);
      } else if (bearer) {
        assert.ok(op.responses['401'], `${id} declares 401`);
      } else {
        assert.deepEqual(op.security, [], `${id}: a public operation says security: []`);
        assert.equal(op.responses['401'], undefined, `${id}: no key, no 401`);
        publicIds.push(id);
      }
      if (!PROBES.has(id))
        assert.ok(
          Object.keys(op.responses).some((s) => s.startsWith('4')),
          `${id} documents its client errors`,
        );
    }
    assert.deepEqual(publicIds.sort(), Object.keys(PUBLIC_OPERATIONS).sort());
  });

  test('headers: Idempotency-Key on every POST, X-Request-Id on every response, Idempotent-Replayed on POST successes', () => {
    for (const { id, method, op } of operations(doc)) {
      const idempotency = (op.parameters ?? []).some((p: Json) => p.$ref === '#/components/parameters/IdempotencyKey');
      assert.equal(
        idempotency,
        method === 'post',
        `${id}: Idempotency-Key ${method === 'post' ? 'declared' : 'absent'}`,
      );
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        assert.ok(response.headers?.['X-Request-Id'], `${id} ${status} declares X-Request-Id`);
        assert.equal(
          Boolean(response.headers['Idempotent-Replayed']),
          method === 'post' && status.startsWith('2'),
          `${id} ${status}: Idempotent-Replayed`,
        );
      }
    }
    assert.equal(doc.components.parameters.IdempotencyKey.name, 'Idempotency-Key');
    assert.equal(doc.components.parameters.IdempotencyKey.in, 'header');
  });

  test('every resource is a named schema: success data is a $ref, never an inline object', () => {
    for (const { id, op } of operations(doc)) {
      // OpenID4VP speaks OAuth to wallets: request objects (JWT), a PEM chain, OAuth error bodies.
      if (op.tags?.includes('OpenID4VP')) {
        for (const [status, response] of Object.entries<Json>(op.responses))
          if (!status.startsWith('2'))
            assert.equal(response.content['application/json'].schema.$ref, '#/components/schemas/OAuthError', id);
        continue;
      }
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (!status.startsWith('2') || PROBES.has(id)) continue;
        // The Prometheus exposition is text, a status list a signed JWT, SAML metadata XML: none is a resource.
        if (!response.content['application/json']) {
          assert.ok(
            [
              'GET /metrics',
              'GET /sandbox/status-lists/{domain}',
              'GET /saml/v1/metadata',
              'GET /sandbox/idp/v1/metadata',
            ].includes(id),
            `${id} ${status}: only the metrics, the status lists and SAML metadata answer in another media type`,
          );
          continue;
        }
        const body = response.content['application/json'].schema;
        const data = body.properties.data;
        const named = data.$ref ?? data.items?.$ref;
        assert.equal(typeof named, 'string', `${id} ${status}: data is a named schema`);
        resolve(named);
        if (body.properties.pagination)
          assert.equal(body.properties.pagination.$ref, '#/components/schemas/Pagination');
      }
      for (const [status, response] of Object.entries<Json>(op.responses))
        if (!status.startsWith('2'))
          assert.equal(response.content['application/json'].schema.$ref, '#/components/schemas/ErrorResponse');
    }
    for (const name of [
      'Session',
      'CreatedSession',
      'SessionResult',
      'App',
      'Key',
      'WebhookEndpoint',
      'Delivery',
      'Event',
    ])
      assert.ok(schemas[name], `components.schemas.${name}`);
    for (const [where, schema] of schemasIn(doc))
      if (typeof schema.$ref === 'string' && where.includes('schema')) resolve(schema.$ref);
  });

  test('closed lists are enums, never an anyOf of single values', () => {
    for (const [where, schema] of schemasIn(doc)) {
      for (const key of ['anyOf', 'oneOf'] as const) {
        if (!Array.isArray(schema[key])) continue;
        const singles = (schema[key] as Json[]).filter(isSingleValue);
        assert.ok(singles.length < 2, `${where}: ${key} of single values; use StringEnum`);
      }
    }
    const enumOf = (name: string) => schemas[name].enum as string[];
    assert.deepEqual(enumOf('ClaimName'), [...CLAIM_CATALOGUE]);
    assert.deepEqual(enumOf('EventType'), [...EVENT_TYPES]);
    assert.deepEqual(enumOf('SessionStatus'), [...SESSION_STATUSES]);
    assert.deepEqual(enumOf('CredentialFormat'), [...CREDENTIAL_FORMATS]);
    assert.deepEqual(enumOf('FailureReason'), [...FAILURE_REASONS]);
    assert.ok(enumOf('AcademicLevel').includes('undergraduate'));

    const bodyOf = (path: string, method: string) =>
      doc.paths[path][method].requestBody.content['application/json'].schema.properties;
    assert.equal(
      bodyOf('/verification/v1/sessions', 'post').requiredClaims.items.$ref,
      '#/components/schemas/ClaimName',
    );
    assert.equal(bodyOf('/org/v1/webhooks', 'post').events.items.$ref, '#/components/schemas/EventType');
    assert.equal(bodyOf('/org/v1/webhooks/{webhookId}', 'patch').events.items.$ref, '#/components/schemas/EventType');
    assert.equal(bodyOf('/org/v1/apps', 'post').webhookEvents.items.$ref, '#/components/schemas/EventType');
    assert.equal(schemas.WebhookEndpoint.properties.events.items.$ref, '#/components/schemas/EventType');
    assert.equal(schemas.SessionWithoutResult.properties.requiredClaims.items.$ref, '#/components/schemas/ClaimName');
  });

  test('a Session has result exactly when its status is completed', () => {
    const branches = (schemas.Session.oneOf as Json[]).map((b) => resolve(b.$ref));
    assert.equal(branches.length, 2);
    const statuses = branches.map((b) => b.properties.status.enum as string[]);
    assert.deepEqual(statuses.flat().sort(), [...SESSION_STATUSES].sort(), 'each status in exactly one branch');
    for (const [i, branch] of branches.entries()) {
      const completed = statuses[i].includes('completed');
      if (completed) {
        assert.deepEqual(statuses[i], ['completed']);
        assert.ok(branch.required.includes('result'));
        assert.equal(branch.properties.result.$ref, '#/components/schemas/SessionResult');
      } else {
        assert.equal(branch.properties.result, undefined);
      }
    }
  });

  test('the webhooks section describes every event type, its payload named and discriminated', () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EVENT_TYPES].sort());
    for (const event of EVENT_TYPES) {
      const operation = doc.webhooks[event].post;
      const payload = resolve(operation.requestBody.content['application/json'].schema.$ref);
      assert.deepEqual(payload.properties.event.enum, [event], `${event}: its payload names it`);
      assert.ok(payload.properties.data.$ref, `${event}: its data is named`);
      assert.deepEqual(operation.security, []);
      const headers = (operation.parameters as Json[]).map(
        (p) => doc.components.parameters[p.$ref.split('/').pop()].name,
      );
      // Ours (docs/webhooks.md), and the Standard Webhooks ones sent beside them on every delivery.
      assert.deepEqual(headers, [
        'X-Service-Signature',
        'X-Service-Event',
        'X-Service-Delivery',
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ]);
    }
    const events = (schemas.Event.oneOf as Json[]).map((b) => resolve(b.$ref).properties.event.enum[0] as string);
    assert.deepEqual(events.sort(), [...EVENT_TYPES].sort());
  });

  test('request bodies carry examples that their own schema accepts', () => {
    const ajv = addFormats.default(new Ajv.default({ strict: false, allErrors: true }));
    for (const { id, op } of operations(doc)) {
      const media = op.requestBody?.content['application/json'];
      if (!media) continue;
      // One example is the media type's `example`; several, its `examples` by name.
      const examples: unknown[] =
        media.example !== undefined ? [media.example] : Object.values<Json>(media.examples ?? {}).map((e) => e.value);
      assert.ok(examples.length > 0, `${id} has an example body`);
      // The body schema with the document's components beside it, so that its $refs resolve.
      const validate = ajv.compile({
        ...media.schema,
        $id: `https://matricula.test/body/${encodeURIComponent(id)}`,
        components: doc.components,
      });
      for (const example of examples) assert.ok(validate(example), `${id}: ${JSON.stringify(validate.errors)}`);
    }
  });

  test('Swagger UI shows real responses: a description on every success, an example per error code', () => {
    const ajv = addFormats.default(new Ajv.default({ strict: false, allErrors: true }));
    const validate = ajv.compile({
      $ref: '#/components/schemas/ErrorResponse',
      $id: 'https://matricula.test/error',
      components: doc.components,
    });
    // OpenID4VP answers wallets in OAuth's words: its examples are OAuth error bodies.
    const validateOAuth = ajv.compile({
      $ref: '#/components/schemas/OAuthError',
      $id: 'https://matricula.test/oauth-error',
      components: doc.components,
    });
    const statusOf = (code: string) => ERROR_STATUS[code as keyof typeof ERROR_STATUS];
    for (const { id, op } of operations(doc)) {
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        assert.ok(response.description, `${id} ${status} has a description`);
        assert.notEqual(response.description, 'Default Response', `${id} ${status}`);
        if (Number(status) < 400) continue;
        const examples = Object.values<Json>(response.content?.['application/json']?.examples ?? {});
        assert.ok(examples.length > 0, `${id} ${status} has error examples`);
        if (op.tags?.includes('OpenID4VP')) {
          for (const { value } of examples)
            assert.ok(validateOAuth(value), `${id} ${status}: ${JSON.stringify(validateOAuth.errors)}`);
          continue;
        }
        for (const { value } of examples) {
          assert.ok(validate(value), `${id} ${status}: ${JSON.stringify(validate.errors)}`);
          assert.equal(
            statusOf((value as Json).error.code),
            Number(status),
            `${id} ${status} shows ${(value as Json).error.code}`,
          );
        }
      }
      if (op.security?.some((s: Json) => 'bearerAuth' in s)) {
        const codes = Object.values<Json>(op.responses['401'].content['application/json'].examples).map(
          (e) => e.value.error.code,
        );
        assert.ok(
          codes.includes('unauthenticated') && !codes.includes('invalid_request'),
          `${id} 401: ${codes.join(', ')}`,
        );
      }
    }
    const created = doc.paths['/verification/v1/sessions'].post.responses['201'];
    assert.equal(created.description, 'The created session');
    const listed = doc.paths['/verification/v1/sessions'].get.responses['200'];
    assert.match(listed.description, /^A page of session items/);
  });
});
