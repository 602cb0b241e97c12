import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliContext } from '../../src/cli/command.ts';
import { runCli } from '../../src/cli/main.ts';
import { DOMAIN, issueEnrolment, newHolder, presentWith, registerExampleUniversity } from '../support/enrolment.ts';
import { forEachDialect, useHarness, type Harness, type Tenant } from '../support/harness.ts';
import { consent, createSession } from '../support/sessions.ts';
import { listeningApp } from '../support/server.ts';
import type { IssuerKey } from '../support/university.ts';

/**
 * SD-JWT VCs that are not Matricula's: a URN `vct` and foreign claim names (an enrolment
 * attestation as EU wallet pilots issue them), issued and presented with @sd-jwt/sd-jwt-vc, a
 * library we did not write, and mapped onto the catalogue by the built-in enrolment profile.
 */

const ADMIN_TOKEN = 'profiles-admin-token-0123456789';

forEachDialect('credential profiles: a foreign SD-JWT VC through /verify and the wallet protocol', (dialect) => {
  let h: Harness;
  let tenant: Tenant;
  let issuer: IssuerKey;
  const holder = newHolder();
  useHarness(dialect, (...suite) => ([h, tenant] = suite), { ADMIN_TOKEN });
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  before(async () => {
    issuer = await registerExampleUniversity(h);
  });

  let counter = 0;
  const verify = async (
    claims: Record<string, unknown>,
    disclose = ['enrolment_status', 'schacPersonalUniqueCode', 'isced_level', 'date_of_expiry'],
    requiredClaims = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'],
  ) => {
    const nonce = `nonce_profiles-${++counter}`;
    const credential = await issueEnrolment(issuer, holder, h.clock.now(), claims);
    const presentation = await presentWith(credential, holder, disclose, {
      nonce,
      aud: h.config.baseUrl,
      now: h.clock.now(),
    });
    const res = await h.app.inject({
      method: 'POST',
      url: '/verification/v1/verify',
      headers: tenant.auth,
      payload: { format: 'sd-jwt-vc', presentation, nonce, requiredClaims },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().data;
  };

  test('foreign claim names map onto the catalogue; the ESI home organisation is university_domain', async () => {
    const data = await verify({});
    assert.equal(data.verified, true, data.failureMessage);
    assert.deepEqual(data.claims, {
      is_active_student: true,
      university_domain: DOMAIN,
      academic_level: 'postgraduate',
      valid_until: '2027-09-30',
    });
    assert.equal(data.university.domain, DOMAIN);
  });

  test('the business receives only what it asked for, and nothing of the credential beyond the catalogue', async () => {
    const data = await verify({}, undefined, ['is_active_student']);
    assert.equal(data.verified, true, data.failureMessage);
    assert.deepEqual(data.claims, { is_active_student: true, academic_level: null, valid_until: '2027-09-30' });
    assert.doesNotMatch(JSON.stringify(data), /Ana|12345|given_name/);
  });

  // What a profile cannot vouch for: each refusal with the reason clients match on.
  const refusals: Array<[string, Record<string, unknown>, string, RegExp?]> = [
    [
      'an enrolment status other than the pinned one is not an active student',
      { enrolment_status: 'withdrawn' },
      'student_inactive',
    ],
    ['a level the profile cannot map is an impossible claim', { isced_level: '3' }, 'invalid_claim', /"3"/],
    [
      'an ESI of another university is refused: the issuer speaks for its own students',
      { schacPersonalUniqueCode: ['urn:schac:personalUniqueCode:int:esi:other.example:1'] },
      'untrusted_issuer',
    ],
    [
      'a type no profile accepts is refused',
      { vct: 'urn:example:library-card:1' },
      'malformed_presentation',
      /urn:example:library-card:1/,
    ],
  ];
  for (const [name, claims, reason, message] of refusals)
    test(name, async () => {
      const data = await verify(claims);
      assert.equal(data.verified, false);
      assert.equal(data.failureReason, reason, data.failureMessage);
      if (message) assert.match(data.failureMessage, message);
    });

  test('our own wallet protocol maps it the same way', async () => {
    const session = await createSession(h, tenant, { requiredClaims: ['is_active_student', 'academic_level'] });
    assert.equal((await consent(h, session)).statusCode, 200);
    const credential = await issueEnrolment(issuer, holder, h.clock.now());
    const presentation = await presentWith(credential, holder, ['enrolment_status', 'isced_level', 'date_of_expiry'], {
      nonce: session.challengeNonce,
      aud: h.config.baseUrl,
      now: h.clock.now(),
    });
    const res = await h.app.inject({
      method: 'POST',
      url: `/verification/v1/sessions/${session.sessionId}/presentation`,
      payload: { nonce: session.challengeNonce, format: 'sd-jwt-vc', presentation },
    });
    assert.equal(res.statusCode, 200, res.body);
    const read = await h.app.inject({
      method: 'GET',
      url: `/verification/v1/sessions/${session.sessionId}`,
      headers: tenant.auth,
    });
    const result = read.json().data.result;
    assert.equal(result.verified, true, result.failureMessage);
    assert.deepEqual(result.claims, {
      is_active_student: true,
      academic_level: 'postgraduate',
      valid_until: '2027-09-30',
    });
  });

  test('a profile added through the admin API verifies at once; its issuers list is enforced; removed, it stops', async () => {
    const profile = {
      id: 'library_pass',
      format: 'dc+sd-jwt',
      vct: ['urn:example:library-pass:1'],
      claims: {
        is_active_student: { from: 'claim', path: ['enrolment_status'], values: ['enrolled'] },
        university_domain: { from: 'issuer' },
        valid_until: { from: 'exp' },
      },
      issuers: ['other.example'],
    };
    const add = (body: object) =>
      h.app.inject({ method: 'POST', url: '/admin/v1/credential-profiles', headers: admin, payload: body });
    const invalid = await add({ ...profile, claims: { ...profile.claims, valid_until: { from: 'expirationDate' } } });
    assert.equal(invalid.statusCode, 400, invalid.body);
    assert.match(invalid.json().error.message, /claims\.valid_until\.from/);
    const builtIn = await add({ ...profile, id: 'student_credential' });
    assert.equal(builtIn.statusCode, 409, builtIn.body);

    const added = await add(profile);
    assert.equal(added.statusCode, 201, added.body);
    assert.equal(added.json().data.source, 'api');
    const listed = await h.app.inject({ method: 'GET', url: '/admin/v1/credential-profiles', headers: admin });
    assert.deepEqual(
      listed.json().data.map((p: { id: string; source: string }) => `${p.id}:${p.source}`),
      [
        'student_credential:built_in',
        'enrolment_attestation:built_in',
        'european_student_card:built_in',
        'verifiable_educational_id:built_in',
        'library_pass:api',
      ],
    );

    const pass = { vct: 'urn:example:library-pass:1' };
    const refused = await verify(pass, ['enrolment_status'], ['is_active_student', 'university_domain']);
    assert.equal(refused.failureReason, 'untrusted_issuer', refused.failureMessage);
    assert.match(refused.failureMessage, /library_pass/);

    const removedBuiltIn = await h.app.inject({
      method: 'DELETE',
      url: '/admin/v1/credential-profiles/enrolment_attestation',
      headers: admin,
    });
    assert.equal(removedBuiltIn.statusCode, 409, removedBuiltIn.body);
    const removed = await h.app.inject({
      method: 'DELETE',
      url: '/admin/v1/credential-profiles/library_pass',
      headers: admin,
    });
    assert.equal(removed.statusCode, 200, removed.body);
    const unknown = await verify(pass, ['enrolment_status'], ['is_active_student']);
    assert.equal(unknown.failureReason, 'malformed_presentation', unknown.failureMessage);

    const open = { ...profile, id: 'library_pass_open', issuers: [DOMAIN] };
    assert.equal((await add(open)).statusCode, 201);
    const accepted = await verify(pass, ['enrolment_status'], ['is_active_student', 'university_domain']);
    assert.equal(accepted.verified, true, accepted.failureMessage);
    assert.equal(accepted.claims.university_domain, DOMAIN);
  });

  test('matricula profiles add | list | remove on the database', async () => {
    const out: string[] = [];
    const ctx: CliContext = {
      env: {},
      stdout: (text) => out.push(text),
      stderr: (text) => out.push(text),
      clock: h.clock,
      openStore: async () => h.store,
      config: () => h.config,
    };
    const dir = mkdtempSync(join(tmpdir(), 'matricula-profile-'));
    try {
      const file = join(dir, 'profile.json');
      const card = { id: 'cli_card', format: 'dc+sd-jwt', vct: ['urn:example:cli-card:1'] };
      const level = { from: 'claim', path: ['lvl'], map: { x: 'y' } };
      writeFileSync(
        file,
        JSON.stringify({ ...card, claims: { is_active_student: { from: 'validity' }, academic_level: level } }),
      );
      assert.equal(await runCli(['profiles', 'add', '--file', file], ctx), 2);
      assert.match(out.join('\n'), /claims\.academic_level\.map\.x/);
      writeFileSync(file, JSON.stringify({ ...card, claims: { is_active_student: { from: 'validity' } } }));
      assert.equal(await runCli(['profiles', 'add', '--file', file], ctx), 0, out.join('\n'));
      out.length = 0;
      assert.equal(await runCli(['profiles', 'list'], ctx), 0);
      assert.match(out.join('\n'), /cli_card\s+api\s+dc\+sd-jwt\s+urn:example:cli-card:1/);
      assert.equal(await runCli(['profiles', 'remove', 'cli_card'], ctx), 0);
      assert.equal(await runCli(['profiles', 'remove', 'student_credential'], ctx), 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('matricula profiles over the admin API (--admin-url), without the database', async () => {
    const served = await listeningApp(h.store, h.clock, { ADMIN_TOKEN });
    const out: string[] = [];
    const ctx: CliContext = {
      env: { MATRICULA_ADMIN_TOKEN: ADMIN_TOKEN },
      stdout: (text) => out.push(text),
      stderr: (text) => out.push(text),
      clock: h.clock,
      openStore: () => Promise.reject(new Error('the CLI opened the database')),
      config: () => h.config,
    };
    const dir = mkdtempSync(join(tmpdir(), 'matricula-profile-admin-'));
    try {
      const file = join(dir, 'profile.json');
      const definition = {
        id: 'remote_card',
        format: 'dc+sd-jwt',
        vct: ['urn:example:remote-card:1'],
        claims: { is_active_student: { from: 'validity' }, university_domain: { from: 'issuer' } },
      };
      writeFileSync(file, JSON.stringify(definition));
      const url = ['--admin-url', served.baseUrl];
      assert.equal(await runCli(['profiles', 'add', '--file', file, ...url, '--json'], ctx), 0, out.join('\n'));
      assert.deepEqual(JSON.parse(out.join('\n')), {
        ...definition,
        source: 'api',
        createdAt: h.clock.now().toISOString(),
      });
      out.length = 0;
      assert.equal(await runCli(['profiles', 'list', ...url, '--json'], ctx), 0, out.join('\n'));
      const listed = JSON.parse(out.join('\n')) as { data: Array<{ id: string }> };
      assert.ok(listed.data.some((p) => p.id === 'remote_card'));
      assert.equal(await runCli(['profiles', 'add', '--file', file, ...url], ctx), 2, 'a duplicate id is refused');
      assert.equal(await runCli(['profiles', 'remove', 'remote_card', ...url], ctx), 0);
      assert.equal(await runCli(['profiles', 'remove', 'remote_card', ...url], ctx), 2, 'gone');
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await served.app.close();
    }
  });
});
