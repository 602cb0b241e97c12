import assert from 'node:assert/strict';
import { createPrivateKey, sign } from 'node:crypto';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { digest } from '@sd-jwt/crypto-nodejs';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../../src/domain/clock.ts';
import { decodeJwt } from '../../src/proofs/sd-jwt-vc/compact.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { runCliInProcess } from '../support/cli.ts';
import { listeningApp } from '../support/server.ts';
import { CA_USAGE, certificate, newIssuerKey, pem, UniversityServer } from '../support/university.ts';

/**
 * The operator's side of issue 12 over a real server: sandbox status lists served by Matricula,
 * `wallet present --revoked`, `sandbox revoke` watched by a session, and `issuers add --anchor /
 * --metadata`, `issuers show`, `issuers refresh`.
 */

forEachDialect('matricula trust and revocation commands', (dialect) => {
  let db: TestStore;
  let server: FastifyInstance;
  let baseUrl: string;
  let secret: string;
  let appId: string;
  let university: UniversityServer;
  const cli = (...args: string[]) =>
    runCliInProcess(
      {
        DATABASE_URL: db.url,
        BASE_URL: baseUrl,
        LOG_LEVEL: 'silent',
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      },
      args,
    );
  const newQr = async () => {
    const res = await fetch(`${baseUrl}/verification/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ appId, purpose: 'Revocation test', requiredClaims: ['is_active_student'] }),
    });
    return ((await res.json()) as { data: { qrPayload: string } }).data.qrPayload;
  };
  const present = async (...args: string[]) => {
    const out = await cli('wallet', 'present', '--qr', await newQr(), '--json', ...args);
    return { code: out.code, result: out.stdout ? JSON.parse(out.stdout) : undefined, stderr: out.stderr };
  };

  before(async () => {
    db = await createTestStore(dialect);
    await seedSandboxIssuers(db.store.db, systemClock);
    ({ app: server, baseUrl } = await listeningApp(db.store, systemClock));
    const org = JSON.parse((await cli('org', 'create', '--name', 'Trust Co', '--json')).stdout);
    secret = org.apiKey.rawSecret;
    appId = org.application.id;
    university = await new UniversityServer().start();
  });
  after(async () => {
    await university.close();
    await server.close();
    await db.drop();
  });

  test('the sandbox universities publish signed status lists', async () => {
    const res = await fetch(`${baseUrl}/sandbox/status-lists/sandbox-state.example`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/statuslist\+jwt/);
    const token = decodeJwt(await res.text());
    assert.equal(token?.header.typ, 'statuslist+jwt');
    assert.equal(token?.payload.sub, `${baseUrl}/sandbox/status-lists/sandbox-state.example`);
    assert.equal((await fetch(`${baseUrl}/sandbox/status-lists/nowhere.example`)).status, 404);
  });

  test('wallet present: valid, --revoked and --suspended credentials; sandbox revoke fails a session', async () => {
    const valid = await present();
    assert.equal(valid.result.verified, true, valid.stderr);
    assert.equal(valid.result.credentialStatus.uri, `${baseUrl}/sandbox/status-lists/sandbox-state.example`);
    const revoked = await present('--revoked');
    assert.deepEqual(
      [revoked.code, revoked.result.verified, revoked.result.failureReason],
      [1, false, 'credential_revoked'],
    );
    assert.equal(
      (await present('--suspended', '--university', 'pruebas.example')).result.failureReason,
      'credential_revoked',
    );
    assert.equal((await present('--revoked', '--format', 'bbs')).code, 2, 'bbs carries no status');

    const idx = String(valid.result.credentialStatus.idx);
    assert.equal((await present('--status-index', idx)).result.verified, true);
    const revoke = await cli('sandbox', 'revoke', '--university', 'sandbox-state.example', '--index', idx);
    assert.equal(revoke.code, 0, revoke.stderr);
    assert.equal((await present('--status-index', idx)).result.failureReason, 'credential_revoked');
    await cli('sandbox', 'revoke', '--university', 'sandbox-state.example', '--index', idx, '--status', 'valid');
    assert.equal((await present('--status-index', idx)).result.verified, true, 'reinstated');
    assert.equal((await cli('sandbox', 'revoke', '--university', 'sandbox-state.example', '--index', '3')).code, 2);
  });

  test('wallet credential --revoked exports a credential whose presentation completes credential_revoked', async () => {
    const verifyExported = async (...flags: string[]) => {
      const out = await cli('wallet', 'credential', '--json', ...flags);
      assert.equal(out.code, 0, out.stderr);
      const exported = JSON.parse(out.stdout);
      assert.equal(exported.status.uri, `${baseUrl}/sandbox/status-lists/sandbox-state.example`);
      const holderKey = createPrivateKey({ key: exported.holderPrivateJwk, format: 'jwk' });
      const holder = new SDJwtVcInstance({
        hasher: digest,
        hashAlg: 'sha-256',
        kbSigner: (data: string) =>
          sign('sha256', Buffer.from(data), { key: holderKey, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
        kbSignAlg: 'ES256',
      });
      const nonce = `nonce_exported-${flags.join('')}`;
      const presentation = await holder.present(
        exported.credential,
        { is_active_student: true, valid_until: true },
        { kb: { payload: { iat: Math.floor(Date.now() / 1000), aud: baseUrl, nonce } } },
      );
      const res = await fetch(`${baseUrl}/verification/v1/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ format: 'sd-jwt-vc', presentation, nonce, requiredClaims: ['is_active_student'] }),
      });
      return ((await res.json()) as { data: { verified: boolean; failureReason: string | null } }).data;
    };
    assert.equal((await verifyExported()).verified, true);
    assert.equal((await verifyExported('--revoked')).failureReason, 'credential_revoked');
  });

  test('issuers add --anchor / --metadata, issuers show, issuers refresh', async () => {
    const caKey = await newIssuerKey();
    const ca = await certificate(caKey, 'Real University Root', new Date(), { ca: true, keyUsage: CA_USAGE });
    const caFile = join(tmpdir(), `trust-ca-${process.pid}.pem`);
    writeFileSync(caFile, pem(ca));
    const flags = ['--country', 'PT', '--environment', 'live', '--json'];
    const added = await cli(
      'issuers',
      'add',
      '--name',
      'Real U',
      '--domain',
      'real.example.edu',
      '--anchor',
      caFile,
      ...flags,
    );
    assert.equal(added.code, 0, added.stderr);
    const anchored = JSON.parse(added.stdout);
    assert.equal(anchored.anchors.length, 1);
    const shown = await cli('issuers', 'show', anchored.id);
    assert.match(shown.stdout, /x509 anchor: CN=Real University Root/);

    const key = await newIssuerKey();
    university.json('/.well-known/jwt-vc-issuer', {
      issuer: university.url,
      jwks: { keys: [{ ...key.publicJwk, kid: 'a' }] },
    });
    const meta = await cli(
      'issuers',
      'add',
      '--name',
      'Meta U',
      '--domain',
      'meta.example.edu',
      '--metadata',
      university.url,
      ...flags,
    );
    assert.equal(meta.code, 0, meta.stderr);
    const id = JSON.parse(meta.stdout).id;
    const refreshed = await cli('issuers', 'refresh', id, '--json');
    assert.equal(refreshed.code, 0, refreshed.stderr);
    assert.deepEqual(
      JSON.parse(refreshed.stdout).keys.map((k: { kid: string }) => k.kid),
      ['a'],
    );
    assert.equal(university.count('/.well-known/jwt-vc-issuer'), 1);
    university.routes.delete('/.well-known/jwt-vc-issuer');
    const failed = await cli('issuers', 'refresh', id);
    assert.equal(failed.code, 2);
    assert.match(failed.stderr, /HTTP 404/);
    assert.match((await cli('issuers', 'refresh', anchored.id)).stderr, /not trusted through issuer metadata/);
  });
});
