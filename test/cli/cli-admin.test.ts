import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { runCli } from '../../src/cli/main.ts';
import { TestClock } from '../../src/domain/clock.ts';
import { sandboxIssuers } from '../../src/proofs/issuer-definitions.ts';
import { sandboxIssuerKeyPair as jwkKeyPair } from '../../src/proofs/sd-jwt-vc/index.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { createTestStore, forEachDialect, testConfig, type TestStore } from '../support/harness.ts';
import { offlineCliContext } from '../support/cli.ts';
import { listeningApp } from '../support/server.ts';
import { CA_USAGE, certificate, newIssuerKey, pem } from '../support/university.ts';

const TOKEN = 'cli-admin-token-0123456789abcdef';
const run = promisify(execFile);

forEachDialect('matricula CLI through the admin API', (dialect) => {
  let db: TestStore;
  let app: FastifyInstance;
  let baseUrl: string;
  let off: { app: FastifyInstance; baseUrl: string };

  /** Runs the CLI in this process; it may not open a database: everything goes over HTTP. */
  const cli = async (env: Record<string, string>, ...argv: string[]) => {
    const { ctx, stdout, stderr } = offlineCliContext(env, { clock: new TestClock(), config: () => testConfig() });
    const code = await runCli(argv, ctx);
    return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
  };
  const withToken = { MATRICULA_ADMIN_TOKEN: TOKEN };

  before(async () => {
    db = await createTestStore(dialect);
    const clock = new TestClock();
    await seedSandboxIssuers(db.store.db, clock);
    ({ app, baseUrl } = await listeningApp(db.store, clock, { ADMIN_TOKEN: TOKEN }));
    off = await listeningApp(db.store, clock);
  });
  after(async () => {
    await app?.close();
    await off?.app.close();
    await db?.drop();
  });

  test('org create --admin-url makes an organization whose key works on /org/v1/apps', async () => {
    const res = await cli(withToken, 'org', 'create', '--name', 'Remote Books', '--admin-url', baseUrl, '--json');
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.deepEqual(Object.keys(out).sort(), ['apiKey', 'application', 'organization']);
    assert.deepEqual(Object.keys(out.organization).sort(), ['id', 'name']);
    assert.match(out.apiKey.rawSecret, /^sk_test_/);
    const apps = await fetch(`${baseUrl}/org/v1/apps`, {
      headers: { authorization: `Bearer ${out.apiKey.rawSecret}` },
    });
    assert.equal(apps.status, 200);
    assert.deepEqual(
      ((await apps.json()) as { data: Array<{ id: string }> }).data.map((a) => a.id),
      [out.application.id],
    );
    const human = await cli({ ...withToken, MATRICULA_ADMIN_URL: baseUrl }, 'org', 'create', '--name', 'Env Co');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /Organization {2}org_\S+ {2}Env Co/);
  });

  test('issuers add, list and remove go through the admin API', async () => {
    const pruebas = sandboxIssuers().find((i) => i.domain === 'pruebas.example')!;
    const file = join(tmpdir(), `issuer-admin-${process.pid}-${dialect}.json`);
    // A live university with a key of its own: published sandbox keys are refused for live entries.
    const liveIssuer = {
      ...pruebas,
      environment: 'live',
      name: 'Pruebas (live, remote)',
      keys: { sdJwtVc: jwkKeyPair('cli-admin-live-test', 'EdDSA').publicJwk },
    };
    writeFileSync(file, JSON.stringify(liveIssuer));
    const env = { ...withToken, MATRICULA_ADMIN_URL: baseUrl };

    const added = await cli(env, 'issuers', 'add', '--file', file, '--json');
    assert.equal(added.code, 0, added.stderr);
    const issuer = JSON.parse(added.stdout);
    assert.match(issuer.id, /^iss_/);
    const duplicate = await cli(env, 'issuers', 'add', '--file', file);
    assert.equal(duplicate.code, 2, 'a duplicate is a usage error, as on the database');
    assert.match(duplicate.stderr, /already registered/);

    const all = JSON.parse((await cli(env, 'issuers', 'list', '--json')).stdout).data;
    assert.deepEqual(
      all.map((i: { domain: string; environment: string }) => `${i.environment} ${i.domain}`),
      ['live pruebas.example', 'sandbox pruebas.example', 'sandbox sandbox-state.example'],
    );
    const live = JSON.parse((await cli(env, 'issuers', 'list', '--environment', 'live', '--json')).stdout).data;
    assert.deepEqual(
      live.map((i: { id: string }) => i.id),
      [issuer.id],
    );

    const removed = await cli(env, 'issuers', 'remove', issuer.id);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`Removed ${issuer.id}`));
    assert.equal((await cli(env, 'issuers', 'remove', issuer.id)).code, 2);
    assert.equal(
      JSON.parse((await cli(env, 'issuers', 'list', '--environment', 'live', '--json')).stdout).data.length,
      0,
    );
  });

  test('issuers add --anchor CERT.pem --admin-url: a PEM anchor (many lines) goes through the admin API', async () => {
    const caKey = await newIssuerKey();
    const ca = await certificate(caKey, 'Remote University Root', new Date(), { ca: true, keyUsage: CA_USAGE });
    const caFile = join(tmpdir(), `admin-ca-${process.pid}-${dialect}.pem`);
    writeFileSync(caFile, pem(ca));
    assert.ok(pem(ca).split('\n').length > 3, 'the PEM spans lines');
    const added = await cli(
      withToken,
      'issuers',
      'add',
      '--name',
      'Remote U',
      '--domain',
      'remote.example.edu',
      '--country',
      'PT',
      '--environment',
      'live',
      '--anchor',
      caFile,
      '--admin-url',
      baseUrl,
      '--json',
    );
    assert.equal(added.code, 0, added.stderr);
    const issuer = JSON.parse(added.stdout);
    assert.equal(issuer.anchors.length, 1);
    const shown = await cli(withToken, 'issuers', 'show', issuer.id, '--admin-url', baseUrl);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /x509 anchor: CN=Remote University Root/);
    assert.equal((await cli(withToken, 'issuers', 'remove', issuer.id, '--admin-url', baseUrl)).code, 0);
  });

  test('no token, a wrong token, or a server without ADMIN_TOKEN: a clear failure', async () => {
    const noToken = await cli({}, 'issuers', 'list', '--admin-url', baseUrl);
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /MATRICULA_ADMIN_TOKEN must be set/);
    const wrong = await cli({ MATRICULA_ADMIN_TOKEN: `${TOKEN}x` }, 'issuers', 'list', '--admin-url', baseUrl);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /unauthenticated/);
    assert.ok(!wrong.stderr.includes(TOKEN), 'the token is not echoed');
    const disabled = await cli(withToken, 'org', 'create', '--name', 'X', '--admin-url', off.baseUrl);
    assert.equal(disabled.code, 1);
    assert.match(disabled.stderr, /is ADMIN_TOKEN set on the server\?/);
  });

  test('bin/matricula uses MATRICULA_ADMIN_URL without touching DATABASE_URL', async () => {
    const { stdout } = await run('./bin/matricula', ['issuers', 'list', '--json'], {
      env: {
        ...process.env,
        MATRICULA_ADMIN_URL: baseUrl,
        MATRICULA_ADMIN_TOKEN: TOKEN,
        // A database that cannot be opened: the command must not try.
        DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none',
        LOG_LEVEL: 'silent',
      },
    });
    assert.deepEqual(
      JSON.parse(stdout)
        .data.map((i: { domain: string }) => i.domain)
        .sort(),
      ['pruebas.example', 'sandbox-state.example'],
    );
  });
});
