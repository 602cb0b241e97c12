import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createPrivateKey, sign } from 'node:crypto';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { digest } from '@sd-jwt/crypto-nodejs';
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../../src/domain/clock.ts';
import { Base8, mulPointEscalar } from '@zk-kit/baby-jubjub';
import { encodeBbsPublicKey, sandboxIssuerKeyPair as bbsKeyPair } from '../../src/proofs/bbs/index.ts';
import { sandboxIssuers } from '../../src/proofs/issuer-definitions.ts';
import { sandboxIssuerKeyPair as jwkKeyPair } from '../../src/proofs/sd-jwt-vc/index.ts';
import { seedSandboxIssuers } from '../../src/services/trust-registry.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import { runCliInProcess } from '../support/cli.ts';
import { listeningApp } from '../support/server.ts';

const liveBabyJubJub = mulPointEscalar(Base8, 987654321n);

forEachDialect('matricula issuers and wallet commands', (dialect) => {
  // Groth16 proofs (about 2 s of CPU each) are made on SQLite only: a groth16 answer is stored
  // like any other format's, which the sd-jwt-vc and bbs tests below check on both databases.
  const groth16 = dialect === 'sqlite';
  let db: TestStore;
  let server: FastifyInstance;
  let baseUrl: string;
  let secret: string;
  let appId: string;
  const cli = (...args: string[]) =>
    runCliInProcess({ DATABASE_URL: db.url, BASE_URL: baseUrl, LOG_LEVEL: 'silent' }, args);
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  const newSession = async (requiredClaims = ['is_active_student', 'university_domain']) =>
    (await api('POST', '/verification/v1/sessions', { appId, purpose: 'CLI test', requiredClaims })).json.data;

  before(async () => {
    db = await createTestStore(dialect);
    await seedSandboxIssuers(db.store.db, systemClock);
    ({ app: server, baseUrl } = await listeningApp(db.store, systemClock));
    const org = JSON.parse((await cli('org', 'create', '--name', 'Wallet Co', '--json')).stdout);
    secret = org.apiKey.rawSecret;
    appId = org.application.id;
  });
  after(async () => {
    await server.close();
    await db.drop();
  });

  test('issuers list shows the seeded sandbox universities; add validates; remove takes effect at once', async () => {
    const listed = JSON.parse((await cli('issuers', 'list', '--json')).stdout).data;
    assert.deepEqual(listed.map((i: { domain: string }) => i.domain).sort(), [
      'pruebas.example',
      'sandbox-state.example',
    ]);
    assert.ok(
      listed.every(
        (i: { environment: string; keys: object }) => i.environment === 'sandbox' && Object.keys(i.keys).length === 3,
      ),
    );

    const dir = tmpdir();
    const bad = join(dir, `issuer-bad-${process.pid}.json`);
    writeFileSync(
      bad,
      JSON.stringify({
        name: 'X',
        domain: 'Not A Domain',
        country: 'Spain',
        environment: 'prod',
        keys: { sdJwtVc: { kty: 'EC', crv: 'P-256', x: 'a', y: 'b', d: 'secret' } },
      }),
    );
    const refused = await cli('issuers', 'add', '--file', bad);
    assert.equal(refused.code, 2);
    for (const field of ['domain', 'country', 'environment', 'private key'])
      assert.match(refused.stderr, new RegExp(field));

    // Finding 4: the sandbox keys of pruebas.example may not be registered for a live university.
    const pruebas = sandboxIssuers().find((i) => i.domain === 'pruebas.example')!;
    const copied = join(dir, `issuer-copied-${process.pid}.json`);
    writeFileSync(copied, JSON.stringify({ ...pruebas, environment: 'live', name: 'Copied sandbox keys' }));
    const refusedCopy = await cli('issuers', 'add', '--file', copied);
    assert.equal(refusedCopy.code, 2);
    for (const field of ['sdJwtVc', 'bbs', 'babyJubJub'])
      assert.match(refusedCopy.stderr, new RegExp(`keys\\.${field}: this is a published sandbox key`));
    const identity = join(dir, `issuer-identity-${process.pid}.json`);
    writeFileSync(
      identity,
      JSON.stringify({
        ...pruebas,
        environment: 'sandbox',
        domain: 'x.example',
        keys: { babyJubJub: { x: '0', y: '1' } },
      }),
    );
    assert.match(
      (await cli('issuers', 'add', '--file', identity)).stderr,
      /keys\.babyJubJub: \(x, y\) is the identity/,
    );

    // A live university with keys of its own.
    const file = join(dir, `issuer-live-${process.pid}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        ...pruebas,
        environment: 'live',
        name: 'Universidad de Pruebas (live test)',
        keys: {
          sdJwtVc: jwkKeyPair('cli-live-test', 'EdDSA').publicJwk,
          bbs: encodeBbsPublicKey(bbsKeyPair('cli-live-test').publicKey),
          babyJubJub: { x: String(liveBabyJubJub[0]), y: String(liveBabyJubJub[1]) },
        },
      }),
    );
    const added = await cli('issuers', 'add', '--file', file, '--json');
    assert.equal(added.code, 0, added.stderr);
    const issuer = JSON.parse(added.stdout);
    assert.match(issuer.id, /^iss_/);
    assert.equal((await cli('issuers', 'add', '--file', file)).code, 2, 'duplicate domain and environment');
    const live = JSON.parse((await cli('issuers', 'list', '--environment', 'live', '--json')).stdout).data;
    assert.deepEqual(
      live.map((i: { id: string }) => i.id),
      [issuer.id],
    );
    const removed = await cli('issuers', 'remove', issuer.id);
    assert.equal(removed.code, 0);
    assert.equal(JSON.parse((await cli('issuers', 'list', '--environment', 'live', '--json')).stdout).data.length, 0);
    assert.equal((await cli('issuers', 'remove', issuer.id)).code, 2);
  });

  test('wallet present answers a session from its qrPayload and the session completes verified', async () => {
    const session = await newSession();
    const res = await cli('wallet', 'present', '--qr', session.qrPayload, '--university', 'pruebas.example', '--json');
    assert.equal(res.code, 0, res.stderr);
    const { credentialStatus, ...outcome } = JSON.parse(res.stdout) as Record<string, unknown>;
    assert.deepEqual(outcome, {
      sessionId: session.sessionId,
      status: 'completed',
      verified: true,
      failureReason: null,
      failureMessage: null,
    });
    // The credential's entry in its university's status list, for `matricula sandbox revoke`.
    assert.equal((credentialStatus as { uri: string }).uri, `${baseUrl}/sandbox/status-lists/pruebas.example`);
    const read = (await api('GET', `/verification/v1/sessions/${session.sessionId}`)).json.data;
    assert.equal(read.result.university.domain, 'pruebas.example');
  });

  if (groth16)
    test('wallet present --format groth16 answers with a zero-knowledge proof', async () => {
      const session = await newSession(['is_active_student', 'valid_until']);
      const res = await cli('wallet', 'present', '--qr', session.qrPayload, '--format', 'groth16', '--json');
      assert.equal(res.code, 0, res.stderr);
      assert.equal(JSON.parse(res.stdout).verified, true);
      // The prover keeps snarkjs' threads for a while after a proof; the command, proving once, ends them.
      assert.equal((globalThis as { curve_bn128?: unknown }).curve_bn128 ?? null, null, 'the prover was released');
      const read = (await api('GET', `/verification/v1/sessions/${session.sessionId}`)).json.data;
      assert.equal(read.result.format, 'groth16');
      assert.equal(read.result.claims.valid_until, null, 'the date stays hidden');
    });

  const misbehaviours: Array<[string[], Record<string, unknown>]> = [
    [['--inactive'], { status: 'completed', verified: false, failureReason: 'student_inactive' }],
    [['--expired-credential'], { status: 'completed', verified: false, failureReason: 'credential_expired' }],
    [['--wrong-nonce'], { status: 'consented', verified: false, failureReason: 'nonce_mismatch' }],
    [['--tamper'], { status: 'consented', verified: false, failureReason: 'invalid_disclosure' }],
    [['--decline'], { status: 'declined', verified: false, failureReason: 'declined' }],
    [['--format', 'bbs', '--tamper'], { status: 'consented', verified: false, failureReason: 'invalid_proof' }],
    [
      ['--format', 'groth16', '--inactive'],
      { status: 'completed', verified: false, failureReason: 'student_inactive' },
    ],
  ];
  for (const [flags, expected] of misbehaviours.filter(([flags]) => groth16 || !flags.includes('groth16'))) {
    test(`wallet present ${flags.join(' ')} misbehaves as asked`, async () => {
      const session = await newSession();
      const res = await cli('wallet', 'present', '--qr', session.qrPayload, ...flags, '--json');
      assert.equal(res.code, 1, res.stderr);
      // A completed session also says why in words (failureMessage); the reason is the contract.
      const {
        failureMessage,
        credentialStatus: _status,
        ...outcome
      } = JSON.parse(res.stdout) as Record<string, unknown>;
      assert.deepEqual(outcome, { sessionId: session.sessionId, ...expected });
      if (expected.status === 'completed') assert.equal(typeof failureMessage, 'string');
    });
  }

  // Black-box conformance run (issue 10): the CLI's body verifies as printed, in every format.
  for (const format of groth16 ? (['sd-jwt-vc', 'bbs', 'groth16'] as const) : (['sd-jwt-vc', 'bbs'] as const)) {
    test(`wallet presentation --format ${format} prints a body /verify accepts as printed`, async () => {
      const res = await cli('wallet', 'presentation', '--format', format, '--university', 'sandbox-state.example');
      assert.equal(res.code, 0, res.stderr);
      const body = JSON.parse(res.stdout);
      assert.deepEqual(Object.keys(body).sort(), ['audience', 'format', 'nonce', 'presentation']);
      assert.match(body.nonce, /^nonce_[A-Za-z0-9_-]{43}$/, 'a fresh nonce when none is given');
      const verified = await api('POST', '/verification/v1/verify', body);
      assert.equal(verified.status, 200);
      assert.equal(verified.json.data.verified, true, JSON.stringify(verified.json.data));
      // Judged on what it discloses: every claim the CLI disclosed (all by default) is reported.
      assert.equal(verified.json.data.claims.is_active_student, true);
      assert.equal(verified.json.data.claims.academic_level, 'undergraduate');
      assert.equal(verified.json.data.claims.university_domain, 'sandbox-state.example');
      if (format === 'groth16') assert.equal(verified.json.data.claims.valid_until, null, 'proven, never revealed');
      else assert.match(verified.json.data.claims.valid_until, /^\d{4}-\d\d-\d\dT/);
      // Printed once, verified once: the nonce is spent.
      const again = await api('POST', '/verification/v1/verify', body);
      assert.equal(again.json.data.failureReason, 'nonce_reused');
    });
  }

  test('wallet presentation binds the nonce it is given; another nonce does not verify', async () => {
    const nonce = 'nonce_my-own-challenge';
    const res = await cli('wallet', 'presentation', '--format', 'sd-jwt-vc', '--nonce', nonce, '--json');
    assert.equal(res.code, 0, res.stderr);
    const body = JSON.parse(res.stdout);
    assert.equal(body.nonce, nonce);
    assert.equal(body.audience, baseUrl);
    const otherNonce = await api('POST', '/verification/v1/verify', { ...body, nonce: 'nonce_another' });
    assert.equal(otherNonce.status, 200);
    assert.equal(otherNonce.json.data.failureReason, 'nonce_mismatch');
    const verified = await api('POST', '/verification/v1/verify', {
      ...body,
      requiredClaims: ['is_active_student', 'academic_level'],
    });
    assert.equal(verified.json.data.verified, true);
    // The date is reported whenever the presentation reveals it (the wallet is always asked for it).
    const { valid_until: validUntil, ...claims } = verified.json.data.claims;
    assert.deepEqual(claims, { is_active_student: true, academic_level: 'undergraduate' });
    assert.ok(Date.parse(validUntil) > Date.now(), `valid_until ${validUntil} is a date in the future`);
  });

  test('wallet credential exports a credential and holder key that a plain @sd-jwt holder presents', async () => {
    const res = await cli('wallet', 'credential', '--university', 'pruebas.example', '--level', 'doctoral', '--json');
    assert.equal(res.code, 0, res.stderr);
    const exported = JSON.parse(res.stdout);
    assert.equal(exported.format, 'sd-jwt-vc');
    assert.equal(exported.vct, 'StudentCredential');
    assert.equal(exported.holderPublicJwk.d, undefined);
    // The holder is built from the export alone: the @sd-jwt library and node:crypto, none of our code.
    const holderKey = createPrivateKey({ key: exported.holderPrivateJwk, format: 'jwk' });
    const holder = new SDJwtVcInstance({
      hasher: digest,
      hashAlg: 'sha-256',
      kbSigner: (data: string) =>
        sign('sha256', Buffer.from(data), { key: holderKey, dsaEncoding: 'ieee-p1363' }).toString('base64url'),
      kbSignAlg: 'ES256',
    });
    const nonce = 'nonce_exported-credential';
    const presentation = await holder.present(
      exported.credential,
      { is_active_student: true, academic_level: true },
      { kb: { payload: { iat: Math.floor(Date.now() / 1000), aud: baseUrl, nonce } } },
    );
    const verified = await api('POST', '/verification/v1/verify', {
      format: 'sd-jwt-vc',
      presentation,
      nonce,
      requiredClaims: ['is_active_student', 'academic_level'],
    });
    assert.equal(verified.json.data.verified, true, JSON.stringify(verified.json));
    assert.equal(verified.json.data.university.domain, 'pruebas.example');
    assert.equal(verified.json.data.claims.academic_level, 'doctoral');

    const inactive = JSON.parse(
      (await cli('wallet', 'credential', '--inactive', '--expired-credential', '--json')).stdout,
    );
    assert.equal(inactive.claims.is_active_student, false);
    assert.ok(Date.parse(inactive.expiresAt) < Date.now());
    const text = await cli('wallet', 'credential');
    assert.equal(text.code, 0);
    assert.match(text.stdout, /~/);
    assert.equal((await cli('wallet', 'credential', '--format', 'bbs')).code, 2);
    assert.equal((await cli('wallet', 'credential', '--university', 'harvard.edu')).code, 2);
  });

  test('wallet usage errors exit 2', async () => {
    assert.equal((await cli('wallet', 'present')).code, 2);
    assert.equal((await cli('wallet', 'present', '--qr', 'https://example.com')).code, 2);
    assert.equal(
      (await cli('wallet', 'present', '--qr', 'matricula://verify?session=s&nonce=n', '--format', 'pdf')).code,
      2,
    );
    assert.equal((await cli('wallet', 'presentation')).code, 2, '--format is required');
    assert.equal((await cli('wallet', 'presentation', '--format', 'bbs', '--nonce', '')).code, 2);
    assert.equal(
      (await cli('wallet', 'presentation', '--format', 'bbs', '--nonce', 'n', '--university', 'harvard.edu')).code,
      2,
    );
    assert.match((await cli('wallet', 'present', '--help')).stdout, /--wrong-nonce/);
  });
});
