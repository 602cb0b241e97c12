import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { systemClock } from '../../src/domain/clock.ts';
import { guardedFetch } from '../../src/outbound/fetch.ts';
import { createGuardedDispatcher } from '../../src/outbound/ssrf.ts';

/** guardedFetch, the fetch handed to openid-client: the SSRF guard, no redirects, a size limit. */
describe('guardedFetch', () => {
  let server: Server;
  let origin: string;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/redirect') return res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      if (req.url === '/big') return res.end('x'.repeat(10_000));
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ method: req.method, body, auth: req.headers.authorization ?? null })),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const fetcher = (allowPrivateTargets: boolean) =>
    guardedFetch({
      dispatcher: createGuardedDispatcher({ allowPrivateTargets }),
      allowPrivateTargets,
      clock: systemClock,
      timeoutMs: 5_000,
      maxBytes: 1_000,
    });

  test('a POST with headers and a form body answers a standard Response', async () => {
    const res = await fetcher(true)(`${origin}/token`, {
      method: 'POST',
      headers: { authorization: 'Basic abc', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code' }),
    });
    assert.ok(res instanceof Response);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { method: 'POST', body: 'grant_type=authorization_code', auth: 'Basic abc' });
  });

  test('a redirect is answered as such, never followed', async () => {
    const res = await fetcher(true)(`${origin}/redirect`);
    assert.equal(res.status, 302);
  });

  test('an answer past the size limit fails', async () => {
    await assert.rejects(fetcher(true)(`${origin}/big`), /more than 1000 bytes/);
  });

  test('loopback and metadata addresses are refused without the private-targets flag', async () => {
    await assert.rejects(fetcher(false)(`${origin}/token`), TypeError);
    await assert.rejects(fetcher(true)('http://169.254.169.254/latest/meta-data'), TypeError);
  });
});
