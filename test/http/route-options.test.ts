import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify, { type FastifyRequest } from 'fastify';
import { installRouteOptions, routeOf } from '../../src/http/route-options.ts';

test("a request's route options are read once and are the route's, in every hook and the handler", async () => {
  const app = Fastify();
  installRouteOptions(app);
  const seen: Array<ReturnType<typeof routeOf>> = [];
  const note = (request: FastifyRequest) => void seen.push(routeOf(request));
  app.addHook('onRequest', (request, _reply, done) => {
    note(request);
    note(request);
    done();
  });
  app.addHook('preHandler', (request, _reply, done) => {
    note(request);
    done();
  });
  app.get('/things/:id', { config: { readsSession: 'id' } }, async (request) => {
    note(request);
    return { ok: true };
  });
  app.get('/other', async (request) => {
    note(request);
    return { ok: true };
  });
  try {
    const first = await app.inject({ method: 'GET', url: '/things/1' });
    assert.equal(first.statusCode, 200);
    assert.equal(seen.length, 4);
    // One object for the whole request: Fastify's getter builds a new one on every read.
    for (const options of seen) assert.equal(options, seen[0]);
    assert.equal(seen[0].url, '/things/:id');
    assert.equal(seen[0].method, 'GET');
    assert.equal(seen[0].config.readsSession, 'id');

    seen.length = 0;
    await app.inject({ method: 'GET', url: '/other' });
    assert.equal(seen[0].url, '/other', "the next request's own route, not the one kept before");
    assert.equal(seen[0].config.readsSession, undefined);

    seen.length = 0;
    const missing = await app.inject({ method: 'GET', url: '/nowhere' });
    assert.equal(missing.statusCode, 404);
    assert.equal(seen[0].url, undefined, 'an unmatched request has no route pattern');
  } finally {
    await app.close();
  }
});
