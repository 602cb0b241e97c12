import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILT_IN_PROFILES, ENROLMENT_ATTESTATION_PROFILE } from '../../src/domain/built-in-profiles.ts';
import { esiHomeOrganisation, validateProfile } from '../../src/domain/credential-profiles.ts';
import { deriveClaims } from '../../src/proofs/profile-claims.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import type { TrustedIssuer } from '../../src/domain/credentials.ts';
import { serviceArgs } from '../support/service-process.ts';

/** The profile model, pure: validation that names the field, the built-ins, and the derivation of catalogue claims. */

const ISSUER: TrustedIssuer = {
  id: 'iss_1',
  name: 'Example University',
  domain: 'uni.example.edu',
  country: 'ES',
  environment: 'sandbox',
  keys: {},
};

const field = (input: unknown) => {
  const checked = validateProfile(input);
  assert.equal(checked.ok, false, 'expected a validation failure');
  return checked.ok ? '' : checked.field;
};

const valid = {
  id: 'my_card',
  format: 'dc+sd-jwt',
  vct: ['urn:example:card:1'],
  claims: { is_active_student: { from: 'validity' } },
};

describe('credential profiles: validation', () => {
  it('accepts every built-in profile as it is', () => {
    for (const profile of BUILT_IN_PROFILES) {
      const checked = validateProfile(JSON.parse(JSON.stringify(profile)));
      assert.ok(checked.ok, `${profile.id}: ${JSON.stringify(checked)}`);
      assert.deepEqual(checked.profile, profile);
    }
  });

  it('names the field a problem is in', () => {
    assert.equal(field({ ...valid, id: 'My Card' }), 'id');
    assert.equal(field({ ...valid, format: 'mso_mdoc' }), 'format');
    assert.equal(field({ ...valid, vct: [] }), 'vct');
    assert.equal(field({ ...valid, vct: ['ok', ''] }), 'vct[1]');
    assert.equal(field({ ...valid, types: ['VerifiableCredential'] }), 'types');
    assert.equal(field({ ...valid, format: 'jwt_vc_json', vct: undefined }), 'types');
    assert.equal(field({ ...valid, claims: {} }), 'claims.is_active_student');
    assert.equal(
      field({ ...valid, claims: { is_active_student: { from: 'claim', path: ['s'] } } }),
      'claims.is_active_student.values',
    );
    assert.equal(
      field({ ...valid, claims: { is_active_student: { from: 'magic' } } }),
      'claims.is_active_student.from',
    );
    assert.equal(
      field({
        ...valid,
        claims: {
          is_active_student: { from: 'validity' },
          academic_level: { from: 'claim', path: ['level'], map: { Master: 'masters' } },
        },
      }),
      'claims.academic_level.map.Master',
    );
    assert.equal(
      field({ ...valid, claims: { is_active_student: { from: 'validity' }, nickname: {} } }),
      'claims.nickname',
    );
    assert.equal(field({ ...valid, extra: true }), 'extra');
    assert.equal(
      field({ ...valid, claims: { is_active_student: { from: 'validity' }, valid_until: { from: 'expirationDate' } } }),
      'claims.valid_until.from',
    );
  });
});

describe('credential profiles: the European Student Identifier', () => {
  it('takes the home organisation of an ESI', () => {
    assert.equal(esiHomeOrganisation('urn:schac:personalUniqueCode:int:esi:uni.example.edu:12345'), 'uni.example.edu');
    assert.equal(esiHomeOrganisation('URN:SCHAC:personalUniqueCode:int:esi:Uni.Example.EDU:a:b'), 'uni.example.edu');
    for (const other of ['urn:schac:personalUniqueCode:es:esi:uni.example.edu:1', 'uni.example.edu', 42, undefined])
      assert.equal(esiHomeOrganisation(other), undefined);
  });
});

describe('credential profiles: deriving the catalogue claims', () => {
  const enrolment = {
    enrolment_status: 'enrolled',
    schacPersonalUniqueCode: ['urn:schac:personalUniqueCode:int:esi:uni.example.edu:77'],
    isced_level: '8',
    date_of_expiry: '2027-09-30',
    given_name: 'Ana',
  };

  it('maps foreign claims onto the catalogue and nothing else', () => {
    const derived = deriveClaims(ENROLMENT_ATTESTATION_PROFILE, enrolment, { issuer: ISSUER });
    assert.deepEqual(derived, {
      ok: true,
      claims: {
        is_active_student: true,
        university_domain: 'uni.example.edu',
        academic_level: 'doctoral',
        valid_until: '2027-09-30',
      },
    });
  });

  it('leaves out what was not disclosed', () => {
    assert.deepEqual(
      deriveClaims(ENROLMENT_ATTESTATION_PROFILE, { enrolment_status: 'on_leave' }, { issuer: ISSUER }),
      {
        ok: true,
        claims: { is_active_student: false },
      },
    );
  });

  it('refuses impossible values with the reason clients match on', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ isced_level: '2' }, 'invalid_claim'],
      [{ schacPersonalUniqueCode: ['student-77'] }, 'invalid_claim'],
      [{ schacPersonalUniqueCode: 'urn:schac:personalUniqueCode:int:esi:other.example:1' }, 'untrusted_issuer'],
      [{ enrolment_status: 1 }, 'malformed_presentation'],
      [{ date_of_expiry: 'next summer' }, 'invalid_claim'],
    ];
    for (const [change, reason] of cases) {
      const derived = deriveClaims(ENROLMENT_ATTESTATION_PROFILE, { ...enrolment, ...change }, { issuer: ISSUER });
      assert.equal(derived.ok ? 'ok' : derived.reason, reason, JSON.stringify(change));
    }
  });
});

describe('CREDENTIAL_PROFILES_FILE', () => {
  const withFile = (content: string, run: (path: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-profiles-'));
    try {
      const path = join(dir, 'profiles.json');
      writeFileSync(path, content);
      run(path);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('loads the profiles of the file', () => {
    withFile(JSON.stringify({ profiles: [valid] }), (path) => {
      assert.deepEqual(loadConfig({ CREDENTIAL_PROFILES_FILE: path }).credentialProfiles, [valid]);
    });
  });

  it('fails with one line naming the variable, the profile and the field', () => {
    const broken = { ...valid, claims: { is_active_student: { from: 'validity' }, academic_level: { from: 'claim' } } };
    withFile(JSON.stringify({ profiles: [valid, broken] }), (path) => {
      assert.throws(
        () => loadConfig({ CREDENTIAL_PROFILES_FILE: path }),
        (err: Error) =>
          err instanceof ConfigError &&
          !err.message.includes('\n') &&
          /CREDENTIAL_PROFILES_FILE .*profiles\[1\]\.claims\.academic_level\.path/.test(err.message),
      );
    });
    for (const content of ['{not json', '{"profiles": 3}'])
      withFile(content, (path) =>
        assert.throws(() => loadConfig({ CREDENTIAL_PROFILES_FILE: path }), /CREDENTIAL_PROFILES_FILE/),
      );
    assert.throws(
      () => loadConfig({ CREDENTIAL_PROFILES_FILE: '/nonexistent/profiles.json' }),
      /CREDENTIAL_PROFILES_FILE cannot be read/,
    );
  });

  it('an error stops the service at start with one line naming the field', () => {
    const broken = { ...valid, claims: { is_active_student: { from: 'claim', path: ['status'], values: [] } } };
    withFile(JSON.stringify({ profiles: [broken] }), (path) => {
      const dir = mkdtempSync(join(tmpdir(), 'matricula-profiles-start-'));
      try {
        const res = spawnSync(process.execPath, serviceArgs(), {
          cwd: fileURLToPath(new URL('../../', import.meta.url)),
          encoding: 'utf8',
          timeout: 60_000,
          env: {
            ...process.env,
            DATABASE_URL: `sqlite:${join(dir, 'never.sqlite')}`,
            PORT: '1',
            LOG_LEVEL: 'silent',
            CREDENTIAL_PROFILES_FILE: path,
          },
        });
        assert.equal(res.status, 1, res.stderr);
        assert.equal(
          res.stderr,
          `Invalid configuration: CREDENTIAL_PROFILES_FILE ${path}: profiles[0].claims.is_active_student.values must list the values that mean an active student\n`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
