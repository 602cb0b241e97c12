import assert from 'node:assert/strict';
import { deflateSync } from 'node:zlib';
import { after, before, it } from 'node:test';
import { TestClock } from '../../src/domain/clock.ts';
import type { StatusListPolicy } from '../../src/domain/credentials.ts';
import { noMetrics } from '../../src/domain/metrics.ts';
import { createVerifiers } from '../../src/proofs/formats.ts';
import { CachingIssuerPublications } from '../../src/services/issuer-publications.ts';
import { PrometheusMetrics } from '../../src/services/metrics.ts';
import { STUDENT_CREDENTIAL_PROFILE } from '../../src/domain/built-in-profiles.ts';
import { checkPresentation, type PresentationOutcome } from '../../src/services/presentations.ts';
import { addIssuer, databaseTrustRegistry } from '../../src/services/trust-registry.ts';
import { createGuardedDispatcher } from '../../src/outbound/ssrf.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import {
  newIssuerKey,
  presentation,
  statusListToken,
  UniversityServer,
  type IssuerKey,
} from '../support/university.ts';

/**
 * Revocation through the IETF Token Status List (issue 12), on both databases, with the
 * university's status lists served by a local HTTP server on 127.0.0.1: valid, revoked and
 * suspended indexes, lists the issuer did not sign, unreachable, slow, huge and bomb lists.
 */

const NONCE = 'nonce_trust_revocation_0123456789';
const AUDIENCE = 'http://matricula.test';
const DOMAIN = 'revoking.example.edu';
const TIMEOUT_MS = 2000;
const MAX_BYTES = 64 * 1024;
const SANDBOX_DOMAIN = 'sandbox-revoking.example.edu';
const SANDBOX_PREFIX = `${AUDIENCE}/sandbox/status-lists/`;
/** What a caller must never read in a rejection: an IP address or an errno code. */
const NETWORK_DETAIL = /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|\bE[A-Z]{3,}\b/;

forEachDialect('credential revocation', (dialect) => {
  let testStore: TestStore;
  let clock: TestClock;
  let server: UniversityServer;
  let key: IssuerKey;
  let check: (
    presentation: string,
    policy?: StatusListPolicy,
    environment?: 'live' | 'sandbox',
  ) => Promise<PresentationOutcome>;
  let sandboxKey: IssuerKey;
  let smallCache: CachingIssuerPublications;

  before(async () => {
    testStore = await createTestStore(dialect);
    clock = new TestClock();
    server = await new UniversityServer().start();
    key = await newIssuerKey();
    const added = await addIssuer(
      { db: testStore.store.db, clock },
      {
        name: 'Revoking University',
        domain: DOMAIN,
        country: 'NL',
        environment: 'live',
        keys: { sdJwtVc: key.publicJwk },
      },
    );
    assert.ok(added.ok);
    sandboxKey = await newIssuerKey();
    const sandboxAdded = await addIssuer(
      { db: testStore.store.db, clock },
      {
        name: 'Sandbox Revoking University',
        domain: SANDBOX_DOMAIN,
        country: 'NL',
        environment: 'sandbox',
        keys: { sdJwtVc: sandboxKey.publicJwk },
      },
    );
    assert.ok(sandboxAdded.ok, JSON.stringify(sandboxAdded));
    const options = (policy: StatusListPolicy) => ({
      clock,
      dispatcher: createGuardedDispatcher({ allowPrivateTargets: true }),
      allowPrivateTargets: true,
      timeoutMs: TIMEOUT_MS,
      maxBytes: MAX_BYTES,
      metadataCacheMinSeconds: 300,
      metadataCacheMaxSeconds: 86_400,
      statusListCacheMaxSeconds: 300,
      statusListPolicy: policy,
      sandboxStatusListPrefix: SANDBOX_PREFIX,
    });
    smallCache = new CachingIssuerPublications({ ...options('fail_closed'), cacheEntries: 2 });
    const registries = new Map(
      (['fail_closed', 'warn'] as const).map((policy) => {
        const publications = new CachingIssuerPublications(options(policy));
        return [policy, databaseTrustRegistry(testStore.store.db, () => {}, publications)];
      }),
    );
    registries.set(
      'small' as StatusListPolicy,
      databaseTrustRegistry(testStore.store.db, () => {}, smallCache),
    );
    check = (p, policy = 'fail_closed', environment = 'live') =>
      checkPresentation(
        { verifiers: createVerifiers(), trustRegistry: registries.get(policy)!, metrics: noMetrics },
        {
          format: 'sd-jwt-vc',
          presentation: p,
          nonce: NONCE,
          audience: AUDIENCE,
          environment,
          requiredClaims: ['is_active_student'],
          now: clock.now(),
          profiles: [STUDENT_CREDENTIAL_PROFILE],
        },
      );
  });
  after(async () => {
    await server.close();
    await testStore.drop();
  });

  function credential(path: string, idx: number) {
    return presentation(
      { iss: `https://${DOMAIN}`, key, domain: DOMAIN, now: clock.now(), status: { uri: `${server.url}${path}`, idx } },
      NONCE,
      AUDIENCE,
    );
  }

  function publish(path: string, options: Partial<Parameters<typeof statusListToken>[0]> = {}) {
    server.text(path, () => statusListToken({ uri: `${server.url}${path}`, key, now: clock.now(), ...options }), {
      'content-type': 'application/statuslist+jwt',
    });
  }

  function judged(outcome: PresentationOutcome) {
    assert.equal(outcome.kind, 'judged', JSON.stringify(outcome));
    return outcome.kind === 'judged' ? outcome.result : assert.fail();
  }

  /** `message` is matched against what the caller reads, `detail` against what the operator's log gets. */
  function rejected(outcome: PresentationOutcome, reason: string, message: RegExp, detail?: RegExp) {
    assert.equal(outcome.kind, 'rejected', JSON.stringify(outcome));
    if (outcome.kind !== 'rejected') return;
    assert.equal(outcome.reason, reason, outcome.message);
    assert.match(outcome.message, message);
    if (detail) assert.match(outcome.detail ?? '', detail);
  }

  it('valid, revoked and suspended indexes; the list is cached per its ttl', async () => {
    publish('/lists/1', { statuses: { 7: 1, 8: 2, 9: 3 }, ttl: 120 });
    const valid = judged(await check(await credential('/lists/1', 6)));
    assert.equal(valid.verified, true);
    assert.equal(valid.warnings, undefined);
    const revoked = judged(await check(await credential('/lists/1', 7)));
    assert.deepEqual([revoked.verified, revoked.failureReason], [false, 'credential_revoked']);
    assert.match(revoked.failureMessage!, /revoked \(status 1 at index 7\)/);
    assert.deepEqual(revoked.university, { name: 'Revoking University', domain: DOMAIN, country: 'NL' });
    const suspended = judged(await check(await credential('/lists/1', 8)));
    assert.deepEqual([suspended.verified, suspended.failureReason], [false, 'credential_revoked']);
    assert.match(suspended.failureMessage!, /suspended/);
    assert.equal(judged(await check(await credential('/lists/1', 9))).failureReason, 'credential_revoked');
    assert.equal(server.count('/lists/1'), 1, 'one fetch within the ttl');
    clock.advance(121_000);
    await check(await credential('/lists/1', 6));
    assert.equal(server.count('/lists/1'), 2, 'fetched again after the ttl');
  });

  it('a list signed by a key the issuer is not trusted for, for another uri, or expired, fails closed', async () => {
    const stranger = await newIssuerKey();
    publish('/lists/stranger', { key: stranger });
    rejected(await check(await credential('/lists/stranger', 1)), 'invalid_status_list', /not signed by this issuer/);
    publish('/lists/other-sub', { uri: `${server.url}/lists/elsewhere` });
    rejected(await check(await credential('/lists/other-sub', 1)), 'invalid_status_list', /sub is not/);
    const past = Math.floor(clock.now().getTime() / 1000) - 10;
    publish('/lists/expired', { exp: past });
    rejected(await check(await credential('/lists/expired', 1)), 'invalid_status_list', /expired/);
    publish('/lists/typ', { header: { typ: 'JWT' } });
    rejected(await check(await credential('/lists/typ', 1)), 'invalid_status_list', /statuslist\+jwt/);
    publish('/lists/short', { size: 8 });
    rejected(await check(await credential('/lists/short', 5000)), 'invalid_status_list', /outside the status list/);
  });

  it('unreachable and slow status servers fail closed; warn lets it through, visibly', async () => {
    const gone = await new UniversityServer().start();
    await gone.close();
    const closedUri = `${gone.url}/lists/1`;
    const unreachable = await presentation(
      { iss: `https://${DOMAIN}`, key, domain: DOMAIN, now: clock.now(), status: { uri: closedUri, idx: 1 } },
      NONCE,
      AUDIENCE,
    );
    const refused = await check(unreachable);
    rejected(refused, 'issuer_unreachable', /status list could not be fetched/, /ECONNREFUSED/);
    assert.doesNotMatch(refused.kind === 'rejected' ? refused.message : '', NETWORK_DETAIL);
    const warned = judged(await check(unreachable, 'warn'));
    assert.equal(warned.verified, true);
    assert.equal(warned.warnings?.[0]?.code, 'credential_status_unknown');
    assert.match(warned.warnings![0]!.message, /Revocation not checked/);
    assert.doesNotMatch(warned.warnings![0]!.message, NETWORK_DETAIL);

    server.hang('/lists/slow');
    const slow = check(await credential('/lists/slow', 1));
    while (server.count('/lists/slow') === 0) await new Promise((resolve) => setImmediate(resolve));
    clock.advance(TIMEOUT_MS);
    rejected(
      await slow,
      'issuer_unreachable',
      /status list could not be fetched/,
      new RegExp(`did not answer within ${TIMEOUT_MS} ms`),
    );
  });

  it('a huge or compressed-bomb status list is refused within the size limit', async () => {
    server.text('/lists/huge', () => 'a'.repeat(MAX_BYTES + 1));
    rejected(
      await check(await credential('/lists/huge', 1)),
      'issuer_unreachable',
      /status list could not be fetched/,
      /more than 65536 bytes/,
    );
    // 16 MiB of zeros deflate to about 16 KiB: small enough to send, four times the inflate limit.
    const bomb = deflateSync(Buffer.alloc(16 * 1024 * 1024), { level: 9 }).toString('base64url');
    assert.ok(bomb.length < MAX_BYTES);
    publish('/lists/bomb', { payload: { status_list: { bits: 1, lst: bomb } } });
    rejected(await check(await credential('/lists/bomb', 1)), 'invalid_status_list', /inflates beyond/);
  });

  it("a sandbox issuer's status list is read only from this service, never fetched", async () => {
    const sandboxCredential = (uri: string) =>
      presentation(
        {
          iss: `https://${SANDBOX_DOMAIN}`,
          key: sandboxKey,
          domain: SANDBOX_DOMAIN,
          now: clock.now(),
          status: { uri, idx: 1 },
        },
        NONCE,
        AUDIENCE,
      );
    server.text(
      '/lists/sandbox',
      () => statusListToken({ uri: `${server.url}/lists/sandbox`, key: sandboxKey, now: clock.now() }),
      {
        'content-type': 'application/statuslist+jwt',
      },
    );
    for (const policy of ['fail_closed', 'warn'] as const)
      rejected(
        await check(await sandboxCredential(`${server.url}/lists/sandbox`), policy, 'sandbox'),
        'invalid_status_list',
        /not allowed for this issuer/,
      );
    assert.equal(server.count('/lists/sandbox'), 0, 'nothing fetched for a sandbox credential');
    rejected(
      await check(await sandboxCredential(`${SANDBOX_PREFIX}not-a-university.example`), 'fail_closed', 'sandbox'),
      'invalid_status_list',
      /not allowed for this issuer/,
    );
  });

  it('a status list is cached only once verified', async () => {
    const stranger = await newIssuerKey();
    publish('/lists/unverified', { key: stranger, ttl: 120 });
    rejected(await check(await credential('/lists/unverified', 1)), 'invalid_status_list', /not signed/);
    rejected(await check(await credential('/lists/unverified', 1)), 'invalid_status_list', /not signed/);
    assert.equal(server.count('/lists/unverified'), 2, 'an unverified list is fetched again, not served from cache');
  });

  it('the caches are bounded by entry count, the least recently used evicted', async () => {
    for (const path of ['/lists/lru-1', '/lists/lru-2', '/lists/lru-3']) publish(path, { ttl: 300 });
    for (const path of ['/lists/lru-1', '/lists/lru-2', '/lists/lru-3', '/lists/lru-3'])
      judged(await check(await credential(path, 1), 'small' as StatusListPolicy));
    assert.equal(server.count('/lists/lru-3'), 1, 'cached');
    judged(await check(await credential('/lists/lru-1', 1), 'small' as StatusListPolicy));
    assert.equal(server.count('/lists/lru-1'), 2, 'evicted past two entries, fetched again');
  });

  it('counts issuer fetches by kind and result, and presentations let through with an unknown status', async () => {
    const metrics = new PrometheusMetrics({ db: testStore.store.db, clock });
    const publications = new CachingIssuerPublications({
      clock,
      dispatcher: createGuardedDispatcher({ allowPrivateTargets: true }),
      allowPrivateTargets: true,
      timeoutMs: TIMEOUT_MS,
      maxBytes: MAX_BYTES,
      metadataCacheMinSeconds: 300,
      metadataCacheMaxSeconds: 86_400,
      statusListCacheMaxSeconds: 300,
      statusListPolicy: 'warn',
      metrics,
    });
    const trustRegistry = databaseTrustRegistry(testStore.store.db, () => {}, publications);
    const checkCounted = (p: string) =>
      checkPresentation(
        { verifiers: createVerifiers(), trustRegistry, metrics },
        {
          format: 'sd-jwt-vc',
          presentation: p,
          nonce: NONCE,
          audience: AUDIENCE,
          environment: 'live',
          requiredClaims: ['is_active_student'],
          now: clock.now(),
          profiles: [STUDENT_CREDENTIAL_PROFILE],
        },
      );
    publish('/lists/counted');
    assert.equal(judged(await checkCounted(await credential('/lists/counted', 1))).warnings, undefined);
    const gone = await new UniversityServer().start();
    await gone.close();
    const unreachable = await presentation(
      { iss: `https://${DOMAIN}`, key, domain: DOMAIN, now: clock.now(), status: { uri: `${gone.url}/l`, idx: 1 } },
      NONCE,
      AUDIENCE,
    );
    assert.equal(judged(await checkCounted(unreachable)).warnings?.[0]?.code, 'credential_status_unknown');
    const { body } = await metrics.scrape();
    assert.match(body, /matricula_issuer_fetches_total\{kind="status_list",result="ok"\} 1/);
    assert.match(body, /matricula_issuer_fetches_total\{kind="status_list",result="error"\} 1/);
    assert.match(body, /matricula_credential_status_unknown_total 1/);
  });
});
