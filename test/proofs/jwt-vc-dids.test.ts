import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { TestClock } from '../../src/domain/clock.ts';
import { didDocumentKeys, didJwkKey, didWebUrl } from '../../src/proofs/jwt-vc/dids.ts';
import { validateIssuerInput } from '../../src/proofs/issuer-definitions.ts';
import { createGuardedDispatcher } from '../../src/outbound/ssrf.ts';
import { CachingIssuerPublications } from '../../src/services/issuer-publications.ts';
import { newIssuerKey, UniversityServer } from '../support/university.ts';
import { didJwk } from '../support/w3c.ts';

/**
 * The DID methods of `jwt_vc_json`: did:jwk decoded in place, did:web mapped to its DID document
 * URL and fetched only through the outbound SSRF guard (a loopback did:web is refused unless
 * private targets are allowed, and then read over http for development).
 */

test('did:web identifiers map to their DID document URLs; anything else is refused', () => {
  assert.equal(didWebUrl('did:web:uni.example.edu'), 'https://uni.example.edu/.well-known/did.json');
  assert.equal(didWebUrl('did:web:uni.example.edu:issuers:esc'), 'https://uni.example.edu/issuers/esc/did.json');
  assert.equal(didWebUrl('did:web:uni.example.edu%3A8443'), 'https://uni.example.edu:8443/.well-known/did.json');
  assert.equal(didWebUrl('did:web:127.0.0.1%3A9'), 'https://127.0.0.1:9/.well-known/did.json');
  assert.equal(
    didWebUrl('did:web:127.0.0.1%3A9', { allowLoopbackHttp: true }),
    'http://127.0.0.1:9/.well-known/did.json',
  );
  assert.equal(
    didWebUrl('did:web:uni.example.edu', { allowLoopbackHttp: true }),
    'https://uni.example.edu/.well-known/did.json',
  );
  for (const bad of ['did:web:', 'did:web:a%2Fb', 'did:web:uni.example.edu:..', 'did:ebsi:zabc', 'did:web:a@b'])
    assert.equal(didWebUrl(bad), undefined, bad);
});

test('did:jwk decodes to its public key; a private key or garbage is not one', async () => {
  const key = await newIssuerKey();
  assert.deepEqual(didJwkKey(didJwk(key.publicJwk)), key.publicJwk);
  assert.deepEqual(didJwkKey(`${didJwk(key.publicJwk)}#0`), key.publicJwk);
  const withD = `did:jwk:${Buffer.from(JSON.stringify(key.privateJwk)).toString('base64url')}`;
  assert.equal(didJwkKey(withD), undefined);
  assert.equal(didJwkKey('did:jwk:not-json'), undefined);
});

test("a DID document's assertion keys carry their method id as kid; another DID's document gives none", async () => {
  const key = await newIssuerKey();
  const did = 'did:web:uni.example.edu';
  const document = {
    id: did,
    verificationMethod: [
      { id: '#key-1', type: 'JsonWebKey2020', controller: did, publicKeyJwk: key.publicJwk },
      { id: `${did}#auth`, type: 'JsonWebKey2020', controller: did, publicKeyJwk: key.publicJwk },
    ],
    assertionMethod: ['#key-1'],
  };
  assert.deepEqual(didDocumentKeys(did, document), [{ ...key.publicJwk, kid: `${did}#key-1` }]);
  assert.match(didDocumentKeys('did:web:other.example', document) as string, /not did:web:other.example/);
});

test('an issuer entry may name a did:web; other DID methods are refused with the field', () => {
  const base = { name: 'U', domain: 'uni.example.edu', country: 'BE', environment: 'live' };
  assert.ok(validateIssuerInput({ ...base, metadataIssuer: 'did:web:uni.example.edu' }).ok);
  const ebsi = validateIssuerInput({ ...base, metadataIssuer: 'did:ebsi:zk4bhCepWSLp9HPSpJgQjGh' });
  assert.ok(!ebsi.ok);
  assert.match(ebsi.problems.join(), /metadataIssuer: a DID must be a did:web/);
});

describe('did:web DID documents fetched from a server', () => {
  let server: UniversityServer;
  before(async () => {
    server = await new UniversityServer().start();
  });
  after(() => server.close());

  const publications = (allowPrivateTargets: boolean) =>
    new CachingIssuerPublications({
      clock: new TestClock(),
      dispatcher: createGuardedDispatcher({ allowPrivateTargets }),
      allowPrivateTargets,
      timeoutMs: 2000,
      maxBytes: 64 * 1024,
      metadataCacheMinSeconds: 300,
      metadataCacheMaxSeconds: 86_400,
      statusListCacheMaxSeconds: 300,
      statusListPolicy: 'fail_closed',
    });

  test('a did:web DID document is fetched through the SSRF guard: a loopback one only when private targets are allowed', async () => {
    const key = await newIssuerKey();
    const did = `did:web:${encodeURIComponent(new URL(server.url).host)}`;
    server.json('/.well-known/did.json', {
      id: did,
      verificationMethod: [{ id: `${did}#k`, type: 'JsonWebKey2020', controller: did, publicKeyJwk: key.publicJwk }],
    });
    const guarded = await publications(false).metadataKeys(did);
    assert.equal(guarded.ok, false);
    assert.equal(server.count('/.well-known/did.json'), 0, 'nothing reached the loopback server');
    const allowed = await publications(true).metadataKeys(did);
    assert.ok(allowed.ok, JSON.stringify(allowed));
    assert.deepEqual(allowed.value, [{ ...key.publicJwk, kid: `${did}#k` }]);
  });
});
