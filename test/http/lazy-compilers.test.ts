import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Ajv from 'ajv';
import Fastify from 'fastify';
import { lazySerializerFactory, lazyValidator } from '../../src/http/lazy-compilers.ts';

describe('schemas compiled on first use (http/lazy-compilers.ts)', () => {
  test('a validator compiles once, on its first call, and reports its errors as Ajv does', () => {
    const ajv = new Ajv.default();
    let compiles = 0;
    const validate = lazyValidator(() => {
      compiles++;
      return ajv.compile({ type: 'object', required: ['a'], properties: { a: { type: 'integer' } } });
    });
    assert.equal(compiles, 0, 'nothing compiled before the first call');
    assert.equal(validate({ a: 'x' }), false);
    assert.equal(validate.errors?.[0]?.instancePath, '/a');
    assert.equal(validate({ a: 1 }), true);
    assert.equal(validate.errors, null, 'the errors of the last call, not of an earlier one');
    assert.equal(compiles, 1);
  });

  test("an app's response serializers are built on a route's first reply, and filter as before", async () => {
    const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } } });
    const schema = { response: { 200: { type: 'object', properties: { shown: { type: 'string' } } } } };
    // A schema fast-json-stringify cannot build: compiled at start, it would fail app.ready().
    const broken = { response: { 200: { type: 'object', properties: { x: { $ref: 'nowhere#/x' } } } } };
    app.get('/a', { schema }, async () => ({ shown: 'yes', hidden: 'never' }));
    app.get('/b', { schema: broken }, async () => ({ x: 1 }));
    await app.ready();
    const res = await app.inject({ method: 'GET', url: '/a' });
    assert.deepEqual(res.json(), { shown: 'yes' }, 'fields outside the schema are still dropped');
    assert.equal((await app.inject({ method: 'GET', url: '/b' })).statusCode, 500, 'built, and failing, on first use');
    await app.close();
  });
});
