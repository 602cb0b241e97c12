import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TestClock } from '../../src/domain/clock.ts';
import { noMetrics } from '../../src/domain/metrics.ts';
import { createVerifiers } from '../../src/proofs/formats.ts';
import { CachingIssuerPublications, MIN_REFRESH_INTERVAL_MS } from '../../src/services/issuer-publications.ts';
import { STUDENT_CREDENTIAL_PROFILE } from '../../src/domain/built-in-profiles.ts';
import { checkPresentation, type PresentationOutcome } from '../../src/services/presentations.ts';
import { addIssuer, databaseTrustRegistry, refreshIssuerMetadata } from '../../src/services/trust-registry.ts';
import { createGuardedDispatcher } from '../../src/outbound/ssrf.ts';
import { createTestStore, forEachDialect, type TestStore } from '../support/harness.ts';
import {
  CA_USAGE,
  certificate,
  newIssuerKey,
  pem,
  presentation,
  SIGNING_USAGE,
  statusListToken,
  UniversityServer,
  x5c,
  type IssuerKey,
} from '../support/university.ts';

/**
 * Trusting real universities (issue 12): X.509 trust anchors and SD-JWT VC issuer metadata, on
 * both databases, with a university played by a local HTTP server on 127.0.0.1 (private targets
 * allowed) and certificates generated here.
 */

const NONCE = 'nonce_trust_issuers_0123456789';
const AUDIENCE = 'http://matricula.test';
const X509_DOMAIN = 'x509.example.edu';
const META_DOMAIN = 'meta.example.edu';

forEachDialect('issuer trust', (dialect) => {
  let testStore: TestStore;
  let clock: TestClock;
  let server: UniversityServer;
  let check: (presentation: string) => Promise<PresentationOutcome>;
  let publications: CachingIssuerPublications;
  let metadataIssuerId: string;
  let rootKey: IssuerKey;
  let root: Awaited<ReturnType<typeof certificate>>;
  let otherRootKey: IssuerKey;
  let otherRoot: Awaited<ReturnType<typeof certificate>>;
  let metaKey: IssuerKey;
  const deps = () => ({ db: testStore.store.db, clock, config: { outboundAllowPrivateTargets: true } });

  before(async () => {
    testStore = await createTestStore(dialect);
    clock = new TestClock();
    server = await new UniversityServer().start();
    metadataIssuerId = server.url;
    publications = new CachingIssuerPublications({
      clock,
      dispatcher: createGuardedDispatcher({ allowPrivateTargets: true }),
      allowPrivateTargets: true,
      timeoutMs: 2000,
      maxBytes: 64 * 1024,
      metadataCacheMinSeconds: 300,
      metadataCacheMaxSeconds: 86_400,
      statusListCacheMaxSeconds: 300,
      statusListPolicy: 'fail_closed',
    });
    const registry = databaseTrustRegistry(testStore.store.db, () => {}, publications);
    const services = { verifiers: createVerifiers(), trustRegistry: registry, metrics: noMetrics };
    check = (p) =>
      checkPresentation(services, {
        format: 'sd-jwt-vc',
        presentation: p,
        nonce: NONCE,
        audience: AUDIENCE,
        environment: 'live',
        requiredClaims: ['is_active_student'],
        now: clock.now(),
        profiles: [STUDENT_CREDENTIAL_PROFILE],
      });

    rootKey = await newIssuerKey();
    root = await certificate(rootKey, 'X509 University Root', clock.now(), { ca: true, keyUsage: CA_USAGE });
    otherRootKey = await newIssuerKey();
    otherRoot = await certificate(otherRootKey, 'Another Root', clock.now(), { ca: true, keyUsage: CA_USAGE });
    metaKey = await newIssuerKey();

    const x509Entry = await addIssuer(deps(), {
      name: 'X509 University',
      domain: X509_DOMAIN,
      country: 'DE',
      environment: 'live',
      anchors: [pem(root)],
    });
    assert.ok(x509Entry.ok, JSON.stringify(x509Entry));
    const metaEntry = await addIssuer(deps(), {
      name: 'Metadata University',
      domain: META_DOMAIN,
      country: 'FR',
      environment: 'live',
      metadataIssuer: metadataIssuerId,
    });
    assert.ok(metaEntry.ok, JSON.stringify(metaEntry));
  });
  after(async () => {
    await server.close();
    await testStore.drop();
  });

  /** A leaf for the X509 university's issuer key, signed by `ca` (the right root by default). */
  async function leafFor(
    key: IssuerKey,
    options: Parameters<typeof certificate>[3] = {},
    ca = { key: rootKey, cert: root },
  ) {
    return certificate(
      key,
      'X509 University issuer',
      clock.now(),
      { dns: X509_DOMAIN, keyUsage: SIGNING_USAGE, ...options },
      ca,
    );
  }

  function x509Credential(key: IssuerKey, chain: string[]) {
    return presentation(
      { iss: `https://${X509_DOMAIN}`, key, domain: X509_DOMAIN, now: clock.now(), header: { x5c: chain } },
      NONCE,
      AUDIENCE,
    );
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

  it('an x5c chain to the entry anchor verifies, and the university is the registry entry', async () => {
    const key = await newIssuerKey();
    const leaf = await leafFor(key);
    const result = judged(await check(await x509Credential(key, x5c(leaf))));
    assert.equal(result.verified, true);
    assert.deepEqual(result.university, { name: 'X509 University', domain: X509_DOMAIN, country: 'DE' });
    // Through an intermediate CA, the root sent along too.
    const intermediateKey = await newIssuerKey();
    const intermediate = await certificate(
      intermediateKey,
      'Issuing CA',
      clock.now(),
      { ca: true, pathLength: 0, keyUsage: CA_USAGE },
      { key: rootKey, cert: root },
    );
    const leaf2 = await leafFor(key, {}, { key: intermediateKey, cert: intermediate });
    assert.equal(judged(await check(await x509Credential(key, x5c(leaf2, intermediate, root)))).verified, true);
  });

  it('a chain to another anchor, or a leaf naming another issuer, is untrusted', async () => {
    const key = await newIssuerKey();
    const foreign = await leafFor(key, {}, { key: otherRootKey, cert: otherRoot });
    rejected(await check(await x509Credential(key, x5c(foreign, otherRoot))), 'untrusted_issuer', /trust anchor/);
    const elsewhere = await leafFor(key, { dns: 'elsewhere.example.edu' });
    rejected(await check(await x509Credential(key, x5c(elsewhere))), 'untrusted_issuer', /does not name/);
    // A valid chain, but the JWT is signed by a key other than the leaf's.
    const leaf = await leafFor(key);
    rejected(await check(await x509Credential(await newIssuerKey(), x5c(leaf))), 'invalid_signature', /leaf/);
  });

  it('a status list is trusted through an x5c chain to the same anchor, and not otherwise', async () => {
    const key = await newIssuerKey();
    const leaf = await leafFor(key);
    // The university signs its lists with a key of its own, certified by the same root.
    const listKey = await newIssuerKey();
    const listLeaf = await leafFor(listKey);
    const foreignKey = await newIssuerKey();
    const foreignLeaf = await leafFor(foreignKey, {}, { key: otherRootKey, cert: otherRoot });
    const lists: Record<string, { key: IssuerKey; header: Record<string, unknown> }> = {
      signed: { key: listKey, header: { x5c: x5c(listLeaf) } },
      foreign: { key: foreignKey, header: { x5c: x5c(foreignLeaf, otherRoot) } },
      // Signed by the credential's own key, with no chain: the entry trusts no raw key.
      bare: { key, header: {} },
    };
    for (const [name, list] of Object.entries(lists)) {
      const uri = `${server.url}/x509-lists/${name}`;
      server.text(
        `/x509-lists/${name}`,
        () => statusListToken({ uri, key: list.key, now: clock.now(), statuses: { 3: 1 }, header: list.header }),
        { 'content-type': 'application/statuslist+jwt' },
      );
    }
    const credential = (list: string, idx: number) =>
      presentation(
        {
          iss: `https://${X509_DOMAIN}`,
          key,
          domain: X509_DOMAIN,
          now: clock.now(),
          header: { x5c: x5c(leaf) },
          status: { uri: `${server.url}/x509-lists/${list}`, idx },
        },
        NONCE,
        AUDIENCE,
      );
    assert.equal(judged(await check(await credential('signed', 2))).verified, true);
    const revoked = judged(await check(await credential('signed', 3)));
    assert.deepEqual([revoked.verified, revoked.failureReason], [false, 'credential_revoked']);
    rejected(await check(await credential('foreign', 2)), 'invalid_status_list', /trust anchor/);
    rejected(await check(await credential('bare', 2)), 'invalid_status_list', /not signed by this issuer: x5c must be/);
  });

  it('expired, not-yet-valid and wrong-usage certificates fail', async () => {
    const key = await newIssuerKey();
    const day = 24 * 3600 * 1000;
    const now = clock.now().getTime();
    const expired = await leafFor(key, { notBefore: new Date(now - 10 * day), notAfter: new Date(now - day) });
    rejected(await check(await x509Credential(key, x5c(expired))), 'untrusted_issuer', /leaf certificate expired/);
    const early = await leafFor(key, { notBefore: new Date(now + day) });
    rejected(await check(await x509Credential(key, x5c(early))), 'untrusted_issuer', /not valid before/);
    const certSigner = await leafFor(key, { keyUsage: CA_USAGE });
    rejected(await check(await x509Credential(key, x5c(certSigner))), 'untrusted_issuer', /digital signatures/);
    // An intermediate that is no CA cannot issue the leaf.
    const notCaKey = await newIssuerKey();
    const notCa = await certificate(
      notCaKey,
      'Not a CA',
      clock.now(),
      { ca: false, keyUsage: SIGNING_USAGE },
      { key: rootKey, cert: root },
    );
    const leaf = await leafFor(key, {}, { key: notCaKey, cert: notCa });
    rejected(await check(await x509Credential(key, x5c(leaf, notCa))), 'untrusted_issuer', /not a CA/);
  });

  it('an anchor that is not a CA certificate is refused when the entry is added', async () => {
    const key = await newIssuerKey();
    const leaf = await leafFor(key);
    const added = await addIssuer(deps(), {
      name: 'Bad',
      domain: 'bad.example.edu',
      country: 'DE',
      environment: 'live',
      anchors: [pem(leaf)],
    });
    assert.equal(added.ok, false);
    assert.match(JSON.stringify(added), /anchors\[0\]: the certificate is not a CA/);
  });

  function metaCredential(key: IssuerKey, kid: string) {
    return presentation(
      { iss: metadataIssuerId, key, domain: META_DOMAIN, now: clock.now(), header: { kid } },
      NONCE,
      AUDIENCE,
    );
  }

  it('issuer metadata is fetched once, cached within bounds, and refreshed once on an unknown kid', async () => {
    const path = '/.well-known/jwt-vc-issuer';
    // max-age below the 5-minute minimum: cached for the minimum.
    server.json(path, { issuer: metadataIssuerId, jwks_uri: `${server.url}/jwks` }, { 'cache-control': 'max-age=10' });
    server.json('/jwks', { keys: [{ ...metaKey.publicJwk, kid: 'k1' }] });
    const result = judged(await check(await metaCredential(metaKey, 'k1')));
    assert.equal(result.verified, true);
    assert.deepEqual(result.university, { name: 'Metadata University', domain: META_DOMAIN, country: 'FR' });
    assert.equal(judged(await check(await metaCredential(metaKey, 'k1'))).verified, true);
    assert.deepEqual([server.count(path), server.count('/jwks')], [1, 1], 'the second verification used the cache');
    clock.advance(60_000);
    await check(await metaCredential(metaKey, 'k1'));
    assert.equal(server.count(path), 1, 'max-age=10 is raised to the 5-minute minimum');
    clock.advance(300_000);
    await check(await metaCredential(metaKey, 'k1'));
    assert.equal(server.count(path), 2, 'past the minimum the metadata is fetched again');

    // The university rotates: credentials now carry kid k2, which the cached copy does not have.
    const rotated = await newIssuerKey();
    server.json('/jwks', {
      keys: [
        { ...metaKey.publicJwk, kid: 'k1' },
        { ...rotated.publicJwk, kid: 'k2' },
      ],
    });
    clock.advance(MIN_REFRESH_INTERVAL_MS);
    assert.equal(judged(await check(await metaCredential(rotated, 'k2'))).verified, true);
    assert.equal(server.count(path), 3, 'one re-fetch for the unknown kid');
    // A kid nobody published re-fetches at most once per interval, then fails.
    rejected(await check(await metaCredential(rotated, 'forged')), 'invalid_signature', /no key with kid "forged"/);
    rejected(await check(await metaCredential(rotated, 'forged-2')), 'invalid_signature', /no key with kid/);
    assert.equal(server.count(path), 3, 'a kid just re-fetched for does not trigger another fetch');
    // A key that is not in the metadata fails even with a published kid.
    rejected(await check(await metaCredential(await newIssuerKey(), 'k1')), 'invalid_signature', /metadata/);
  });

  it('metadata naming another issuer, or an unreachable one, is never a pass', async () => {
    server.json('/.well-known/jwt-vc-issuer', {
      issuer: 'https://impostor.example',
      jwks: { keys: [metaKey.publicJwk] },
    });
    const refreshed = await refreshIssuerMetadata({ db: testStore.store.db, publications }, (await findMetaId())!);
    assert.equal(refreshed.ok, false);
    rejected(
      await check(await metaCredential(metaKey, 'k1')),
      'issuer_unreachable',
      /issuer's metadata could not be fetched/,
      /names issuer "https:\/\/impostor/,
    );
    server.routes.delete('/.well-known/jwt-vc-issuer');
    rejected(
      await check(await metaCredential(metaKey, 'k1')),
      'issuer_unreachable',
      /issuer's metadata could not be fetched/,
      /HTTP 404/,
    );
    server.json('/.well-known/jwt-vc-issuer', {
      issuer: metadataIssuerId,
      jwks: { keys: [{ ...metaKey.publicJwk, kid: 'k1' }] },
    });
    const again = await refreshIssuerMetadata({ db: testStore.store.db, publications }, (await findMetaId())!);
    assert.ok(again.ok && again.keys.length === 1, 'issuers refresh fetches now');
    assert.equal(judged(await check(await metaCredential(metaKey, 'k1'))).verified, true);
  });

  async function findMetaId() {
    const rows = await testStore.store.db.selectFrom('issuers').select(['id', 'domain']).execute();
    return rows.find((row) => row.domain === META_DOMAIN)?.id;
  }

  it('a refused metadata fetch tells the caller what failed, not the address or the error code', async () => {
    const gone = await new UniversityServer().start();
    await gone.close();
    const goneDomain = 'gone.example.edu';
    const entry = await addIssuer(deps(), {
      name: 'Gone University',
      domain: goneDomain,
      country: 'FR',
      environment: 'live',
      metadataIssuer: gone.url,
    });
    assert.ok(entry.ok, JSON.stringify(entry));
    const key = await newIssuerKey();
    const outcome = await check(
      await presentation(
        { iss: gone.url, key, domain: goneDomain, now: clock.now(), header: { kid: 'k1' } },
        NONCE,
        AUDIENCE,
      ),
    );
    rejected(outcome, 'issuer_unreachable', /^the issuer's metadata could not be fetched$/, /ECONNREFUSED/);
    assert.doesNotMatch(
      outcome.kind === 'rejected' ? outcome.message : '',
      /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|\bE[A-Z]{3,}\b/,
    );
  });
});
