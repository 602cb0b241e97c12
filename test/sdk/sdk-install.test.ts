import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { signStandardWebhook } from '../../src/webhooks/signature.ts';
import { newSigningSecret } from '../../src/webhooks/secrets.ts';

/**
 * The SDK is not on the npm registry. The README installs it from the tarball `npm run sdk:pack`
 * writes (also part of `npm run build`): this test takes exactly that path, packing the checkout,
 * installing the tarball into an empty project with `npm install --offline`, and running plain node
 * there against the installed package.
 */

const root = new URL('../../', import.meta.url);
const npm = (args: string[], cwd: string) =>
  execFileSync('npm', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' },
  });

describe('the packed SDK installed into a fresh project', () => {
  let dir: string;
  let app: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'matricula-sdk-install-'));
    // The documented command, with the tarball sent to the temporary directory instead of dist/.
    npm(['run', '--silent', 'sdk:pack', '--', '--pack-destination', dir], root.pathname);
    const tarballs = readdirSync(dir).filter((name) => name.endsWith('.tgz'));
    assert.deepEqual(tarballs, ['matricula-sdk-0.1.0.tgz']);
    app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    npm(['install', '--offline', join(dir, tarballs[0]!)], app);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('the packed SDK installs offline into a fresh project and works under plain node', async () => {
    // A loopback server standing in for the service: what matters is that the installed client sends
    // a real, authenticated request and reads the answer.
    const seen: Array<{ method?: string; url?: string; headers: IncomingHttpHeaders }> = [];
    const server = createServer((req, res) => {
      seen.push({ method: req.method, url: req.url, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: true, data: { sessionId: 'sess_x', status: 'pending' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const secret = newSigningSecret();
      const body = JSON.stringify({ id: 'evt_1', event: 'consent.approved', data: { sessionId: 'sess_x' } });
      const t = Math.floor(Date.now() / 1000);
      const headers = {
        'webhook-id': 'evt_1',
        'webhook-timestamp': String(t),
        'webhook-signature': signStandardWebhook('evt_1', body, [secret], t),
      };
      const script = `
      import { Matricula } from '@matricula/sdk';
      import { verifyWebhookSignature } from '@matricula/sdk/webhooks';
      const client = new Matricula({ apiKey: 'sk_test_installed', baseUrl: ${JSON.stringify(baseUrl)} });
      const session = await client.sessions.retrieve('sess_x');
      const event = Matricula.webhooks.verify(${JSON.stringify(body)}, ${JSON.stringify(headers)}, ${JSON.stringify(secret)});
      console.log(JSON.stringify({ status: session.status, event: event.event, fn: typeof verifyWebhookSignature }));`;
      // Plain node in the installed project: no tsx, no path into this checkout. Asynchronous, so that
      // the loopback server keeps answering.
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
        cwd: app,
      });
      assert.deepEqual(JSON.parse(stdout), { status: 'pending', event: 'consent.approved', fn: 'function' });
      assert.equal(seen.length, 1);
      assert.equal(seen[0]!.url, '/verification/v1/sessions/sess_x');
      assert.equal(seen[0]!.headers.authorization, 'Bearer sk_test_installed');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('the installed package carries its types: a strict TypeScript program compiles against it', () => {
    writeFileSync(
      join(app, 'main.ts'),
      `import { Matricula, MatriculaError } from '@matricula/sdk';
const client: Matricula = new Matricula({ apiKey: 'sk_test_x', baseUrl: 'http://127.0.0.1:9' });
export async function status(id: string): Promise<string> {
  try {
    return (await client.sessions.retrieve(id)).status;
  } catch (error) {
    if (error instanceof MatriculaError) return error.code;
    throw error;
  }
}
`,
    );
    const tsc = new URL('node_modules/typescript/bin/tsc', root).pathname;
    execFileSync(
      process.execPath,
      [
        tsc,
        '--strict',
        '--noEmit',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--types',
        'node',
        '--typeRoots',
        new URL('node_modules/@types', root).pathname,
        'main.ts',
      ],
      { cwd: app, encoding: 'utf8' },
    );
  });
});
