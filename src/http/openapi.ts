/**
 * What the route schemas cannot say, added to the OpenAPI document once for every operation: the
 * headers of the idempotency layer and the request id, on every operation they apply to.
 */

type Json = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const HEADERS: Json = {
  RequestId: {
    description: 'The id of this request (prefix req_); quote it when you report a problem',
    required: true,
    schema: { type: 'string' },
  },
  IdempotentReplayed: {
    description: 'true when this response is the replay of an earlier request with the same Idempotency-Key',
    schema: { type: 'string', enum: ['true'] },
  },
};

const PARAMETERS: Json = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes the POST safe to retry: the first response is kept 24 h and replayed for the same key and the same request; the same key with another request is a 409 idempotency_conflict. 1 to 255 printable ASCII characters.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  },
};

/** Adds the shared headers and parameters to every operation of `document`, in place. */
export function completeDocument(document: Json): Json {
  const components = (document.components ??= {});
  components.headers = { ...components.headers, ...HEADERS };
  components.parameters = { ...components.parameters, ...PARAMETERS };
  for (const item of Object.values<Json>(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      if (method === 'post')
        operation.parameters = [...(operation.parameters ?? []), { $ref: '#/components/parameters/IdempotencyKey' }];
      for (const [status, response] of Object.entries<Json>(operation.responses ?? {})) {
        const headers: Json = { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };
        if (method === 'post' && status.startsWith('2'))
          headers['Idempotent-Replayed'] = { $ref: '#/components/headers/IdempotentReplayed' };
        response.headers = { ...response.headers, ...headers };
      }
    }
  }
  return document;
}
