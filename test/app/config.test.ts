import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { ConfigError, DEFAULT_RETRY_SCHEDULE, loadConfig } from '../../src/config.ts';
import { parseServerArgs, ServerArgsError, serverVersion } from '../../src/server-args.ts';
import { serviceArgs } from '../support/service-process.ts';

test('defaults follow README.md (Configuration)', () => {
  const config = loadConfig({});
  assert.equal(config.port, 8080);
  assert.equal(config.host, '0.0.0.0');
  assert.equal(config.baseUrl, 'http://localhost:8080');
  assert.equal(config.portalUrl, 'http://localhost:8080');
  assert.equal(config.appScheme, 'matricula');
  assert.equal(config.databaseUrl, 'sqlite:./data/matricula.sqlite');
  assert.equal(config.outboundAllowPrivateTargets, false);
  assert.deepEqual(config.webhookRetrySchedule, DEFAULT_RETRY_SCHEDULE);
  assert.equal(config.role, 'all');
});

test('values are parsed and the role comes from --role', () => {
  const config = loadConfig(
    {
      PORT: '9000',
      BASE_URL: 'https://verify.example.com/',
      PORTAL_URL: 'https://portal.example.com',
      OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1, 2,3',
    },
    ['--role', 'worker'],
  );
  assert.equal(config.port, 9000);
  assert.equal(config.baseUrl, 'https://verify.example.com');
  assert.equal(config.portalUrl, 'https://portal.example.com');
  assert.equal(config.outboundAllowPrivateTargets, true);
  assert.deepEqual(config.webhookRetrySchedule, [1, 2, 3]);
  assert.equal(config.role, 'worker');
});

test('the command line: --role, --port and --host override their variables; anything else is an error', () => {
  const config = loadConfig({ PORT: '9000', HOST: '0.0.0.0', ROLE: 'api' }, [
    '--port',
    '8099',
    '--host=127.0.0.1',
    '--role=worker',
  ]);
  assert.equal(config.port, 8099);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.role, 'worker');
  assert.equal(config.baseUrl, 'http://localhost:8099', 'BASE_URL follows the port when unset');
  assert.deepEqual(parseServerArgs(['--help']), { action: 'help' });
  assert.deepEqual(parseServerArgs(['-v']), { action: 'version' });
  assert.match(serverVersion(), /^\d+\.\d+\.\d+/);
  const refused: Array<[string[], RegExp]> = [
    [['--prot', '8099'], /^unknown flag --prot$/],
    [['-p'], /^unknown flag -p$/],
    [['start'], /unexpected argument "start"/],
    [['--port'], /^--port needs a value$/],
    [['--port', '80a'], /--port must be a whole number from 0 to 65535 \(got "80a"\)/],
    [['--port', '70000'], /--port must be a whole number/],
  ];
  for (const [argv, message] of refused) {
    assert.throws(
      () => loadConfig({}, argv),
      (err: Error) => err instanceof ServerArgsError && message.test(err.message),
    );
  }
  assert.throws(() => loadConfig({}, ['--role', 'boss']), /ROLE must be one of/);
});

test('a bad value names its variable', () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ BASE_URL: 'not a url' }, /BASE_URL/],
    [{ PORTAL_URL: 'ftp://x' }, /PORTAL_URL/],
    [{ APP_SCHEME: 'Bad Scheme' }, /APP_SCHEME/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'maybe' }, /WEBHOOK_ALLOW_PRIVATE_TARGETS/],
    [{ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'maybe' }, /OUTBOUND_ALLOW_PRIVATE_TARGETS/],
    [{ WEBHOOK_RETRY_SCHEDULE: '10,x' }, /WEBHOOK_RETRY_SCHEDULE/],
    [{ WEBHOOK_RETRY_SCHEDULE: '0' }, /WEBHOOK_RETRY_SCHEDULE/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ OPENID4VP_SCHEME: 'Open ID' }, /OPENID4VP_SCHEME/],
    [{ OPENID4VP_CLIENT_ID_PREFIX: 'openid_federation' }, /OPENID4VP_CLIENT_ID_PREFIX/],
    [{ OPENID4VP_RESPONSE_MODE: 'fragment' }, /OPENID4VP_RESPONSE_MODE/],
    [{ OPENID4VP_ACCEPTED_VCT: ' , ' }, /OPENID4VP_ACCEPTED_VCT/],
    [{ OPENID4VP_SIGNING_KEY_FILE: '/nonexistent/key.pem' }, /OPENID4VP_SIGNING_KEY_FILE/],
    [{ OPENID4VP_SIGNING_KEY_FILE: 'package.json' }, /OPENID4VP_SIGNING_KEY_FILE.*PEM/],
  ];
  for (const [env, pattern] of cases) {
    assert.throws(
      () => loadConfig(env),
      (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
    );
  }
});

test('the server stops at start with one clear line for a bad value', () => {
  const result = spawnSync(process.execPath, serviceArgs(), {
    env: { ...process.env, PORT: 'abc' },
    encoding: 'utf8',
  });
  assert.equal(result.status, 1);
  assert.equal(result.stderr.trim(), 'Invalid configuration: PORT must be a whole number from 0 to 65535 (got "abc")');
});

test('METRICS_PORT: unset is none; a port; PORT itself only for the worker role, which listens on nothing else', () => {
  assert.equal(loadConfig({}).metricsPort, undefined);
  assert.equal(loadConfig({ METRICS_PORT: '' }).metricsPort, undefined);
  assert.equal(loadConfig({ METRICS_PORT: '9464' }).metricsPort, 9464);
  assert.equal(loadConfig({ METRICS_PORT: '8080', ROLE: 'worker' }).metricsPort, 8080);
  assert.throws(
    () => loadConfig({ METRICS_PORT: '8080' }),
    /^ConfigError: Invalid configuration: METRICS_PORT must differ from PORT \(8080\)/,
  );
  assert.throws(() => loadConfig({ METRICS_PORT: 'x' }), /METRICS_PORT must be a whole number from 0 to 65535/);
});

test('METRICS_TOKEN and ADMIN_TOKEN: unset or empty is none; a short or spaced token stops the start', () => {
  assert.equal(loadConfig({}).metricsToken, undefined);
  assert.equal(loadConfig({ ADMIN_TOKEN: '' }).adminToken, undefined);
  const config = loadConfig({ METRICS_TOKEN: 'm'.repeat(16), ADMIN_TOKEN: 'a'.repeat(32) });
  assert.equal(config.metricsToken, 'm'.repeat(16));
  assert.equal(config.adminToken, 'a'.repeat(32));
  for (const name of ['METRICS_TOKEN', 'ADMIN_TOKEN'])
    for (const bad of ['short', 'has a space in it somewhere'])
      assert.throws(
        () => loadConfig({ [name]: bad }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, new RegExp(`^Invalid configuration: ${name} must be at least 16 characters`));
          assert.ok(!err.message.includes(bad), 'the value is not echoed: it is a secret');
          return true;
        },
      );
});

test('RESULT_RETENTION_DAYS: 30 by default, a whole number of days from 1 to 3650', () => {
  assert.equal(loadConfig({}).resultRetentionDays, 30);
  assert.equal(loadConfig({ RESULT_RETENTION_DAYS: '' }).resultRetentionDays, 30);
  assert.equal(loadConfig({ RESULT_RETENTION_DAYS: '1' }).resultRetentionDays, 1);
  assert.equal(loadConfig({ RESULT_RETENTION_DAYS: '3650' }).resultRetentionDays, 3650);
  for (const bad of ['0', '3651', '7.5', 'forever', '-1'])
    assert.throws(
      () => loadConfig({ RESULT_RETENTION_DAYS: bad }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message ===
          `Invalid configuration: RESULT_RETENTION_DAYS must be a whole number from 1 to 3650 (got "${bad}")`,
    );
});

test('OUTBOUND_ALLOW_PRIVATE_TARGETS, or its older name WEBHOOK_ALLOW_PRIVATE_TARGETS; both different is an error', () => {
  assert.equal(loadConfig({ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true' }).outboundAllowPrivateTargets, true);
  assert.equal(loadConfig({ OUTBOUND_ALLOW_PRIVATE_TARGETS: 'false' }).outboundAllowPrivateTargets, false);
  assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }).outboundAllowPrivateTargets, true);
  assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' }).outboundAllowPrivateTargets, false);
  // An empty value is unset, as for every variable: the other name decides.
  const emptyNew = { OUTBOUND_ALLOW_PRIVATE_TARGETS: '', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
  assert.equal(loadConfig(emptyNew).outboundAllowPrivateTargets, true);
  const emptyOld = { OUTBOUND_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: '' };
  assert.equal(loadConfig(emptyOld).outboundAllowPrivateTargets, true);
  // Both set to the same value (in any spelling) is fine.
  const same = { OUTBOUND_ALLOW_PRIVATE_TARGETS: 'yes', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
  assert.equal(loadConfig(same).outboundAllowPrivateTargets, true);
  for (const [current, alias] of [
    ['true', 'false'],
    ['false', 'true'],
  ])
    assert.throws(
      () => loadConfig({ OUTBOUND_ALLOW_PRIVATE_TARGETS: current, WEBHOOK_ALLOW_PRIVATE_TARGETS: alias }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message ===
          `Invalid configuration: OUTBOUND_ALLOW_PRIVATE_TARGETS is ${current} but its older name ` +
            `WEBHOOK_ALLOW_PRIVATE_TARGETS is ${alias}; set only OUTBOUND_ALLOW_PRIVATE_TARGETS`,
    );
});

test('JOB_*_SECONDS: the interval of each periodic job, with a default and bounds', () => {
  assert.deepEqual(loadConfig({}).jobs, {
    sessionExpirySeconds: 5,
    expiredRowsPurgeSeconds: 600,
    resultRetentionSeconds: 60,
    eventRetentionSeconds: 60,
    federationRefreshSeconds: 300,
  });
  assert.equal(loadConfig({}).eventRetentionDays, 30);
  assert.equal(loadConfig({ EVENT_RETENTION_DAYS: '7' }).eventRetentionDays, 7);
  assert.throws(
    () => loadConfig({ EVENT_RETENTION_DAYS: '0' }),
    /EVENT_RETENTION_DAYS must be a whole number from 1 to 3650/,
  );
  const set = loadConfig({
    JOB_SESSION_EXPIRY_SECONDS: '2',
    JOB_EXPIRED_ROWS_PURGE_SECONDS: '3600',
    JOB_RESULT_RETENTION_SECONDS: '300',
    JOB_EVENT_RETENTION_SECONDS: '120',
    JOB_FEDERATION_REFRESH_SECONDS: '900',
  });
  assert.deepEqual(set.jobs, {
    sessionExpirySeconds: 2,
    expiredRowsPurgeSeconds: 3600,
    resultRetentionSeconds: 300,
    eventRetentionSeconds: 120,
    federationRefreshSeconds: 900,
  });
  const bounds: Array<[string, string, string]> = [
    ['JOB_SESSION_EXPIRY_SECONDS', '0', 'from 1 to 3600'],
    ['JOB_SESSION_EXPIRY_SECONDS', '3601', 'from 1 to 3600'],
    ['JOB_EXPIRED_ROWS_PURGE_SECONDS', '9', 'from 10 to 86400'],
    ['JOB_EXPIRED_ROWS_PURGE_SECONDS', '86401', 'from 10 to 86400'],
    ['JOB_RESULT_RETENTION_SECONDS', '9', 'from 10 to 86400'],
    ['JOB_RESULT_RETENTION_SECONDS', 'hourly', 'from 10 to 86400'],
  ];
  for (const [name, bad, range] of bounds)
    assert.throws(
      () => loadConfig({ [name]: bad }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message === `Invalid configuration: ${name} must be a whole number ${range} (got "${bad}")`,
    );
});

test('X509_ALLOWED_EKUS: document signing by default, names or dotted OIDs, none, and a clear error', () => {
  const documentSigning = '1.3.6.1.5.5.7.3.36';
  assert.deepEqual(loadConfig({}).trust.x509AllowedEkus, ['2.5.29.37.0', documentSigning, '1.0.18013.5.1.2']);
  assert.deepEqual(loadConfig({ X509_ALLOWED_EKUS: '' }).trust.x509AllowedEkus, loadConfig({}).trust.x509AllowedEkus);
  assert.deepEqual(loadConfig({ X509_ALLOWED_EKUS: 'documentSigning, serverauth,1.2.3.4.5' }).trust.x509AllowedEkus, [
    documentSigning,
    '1.3.6.1.5.5.7.3.1',
    '1.2.3.4.5',
  ]);
  assert.deepEqual(loadConfig({ X509_ALLOWED_EKUS: 'none' }).trust.x509AllowedEkus, []);
  for (const bad of ['tls', '1.2.', '1.02.3', 'documentSigning,,serverAuth'])
    assert.throws(
      () => loadConfig({ X509_ALLOWED_EKUS: bad }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^Invalid configuration: X509_ALLOWED_EKUS must list extended key usages, comma-separated, by name \(anyExtendedKeyUsage, serverAuth/.test(
          err.message,
        ),
    );
});

test('OpenID4VP: defaults, and the signing key and chain go together', () => {
  const config = loadConfig({});
  assert.deepEqual(config.openid4vp, {
    scheme: 'openid4vp',
    clientIdPrefix: 'x509_hash',
    responseMode: 'direct_post.jwt',
    acceptedVct: ['StudentCredential'],
  });
  assert.deepEqual(
    loadConfig({ OPENID4VP_ACCEPTED_VCT: 'StudentCredential, urn:eu:student:1' }).openid4vp.acceptedVct,
    ['StudentCredential', 'urn:eu:student:1'],
  );
  const pem = join(mkdtempSync(join(tmpdir(), 'oid4vp-config-')), 'key.pem');
  writeFileSync(pem, '-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n');
  assert.throws(
    () => loadConfig({ OPENID4VP_SIGNING_KEY_FILE: pem }),
    (err: unknown) => err instanceof ConfigError && /OPENID4VP_CERTIFICATE_CHAIN_FILE/.test(err.message),
  );
});
