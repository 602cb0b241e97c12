import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { SignedXml } from 'xml-crypto';
import { streamProviders, type MetadataRoot } from '../../src/services/sso/saml/aggregate-entities.ts';
import { verifyAggregate } from '../../src/services/sso/saml/aggregate.ts';
import {
  aggregateThreads,
  INLINE_MAX_BYTES,
  verifyAggregateInThread,
} from '../../src/services/sso/saml/aggregate-thread.ts';
import { generateSamlKeyPair } from '../../src/services/sso/saml/sp-keys.ts';
import { providersOf } from '../../src/services/sso/saml/idp-metadata.ts';
import { parseXmlStrictly, XmlRefused } from '../../src/services/sso/saml/xml.ts';
import { withStrongAlgorithms } from '../../src/services/sso/saml/xmldsig-algorithms.ts';
import { federationKey, idpEntity, signedAggregate, type FederationKey } from '../support/federation.ts';

/**
 * The streaming reader of a verified aggregate (aggregate-entities.ts): the entities it reads must be
 * those a DOM of the whole document would give, whatever the shape of the (canonical) text.
 */

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const NOW = new Date('2026-11-26T12:00:00Z');
const PREFIXES =
  'xmlns:ds="http://www.w3.org/2000/09/xmldsig#" xmlns:shibmd="urn:mace:shibboleth:metadata:1.0" ' +
  'xmlns:mdui="urn:oasis:names:tc:SAML:metadata:ui" xmlns:mdrpi="urn:oasis:names:tc:SAML:metadata:rpi"';

describe('the entities of a federation aggregate, read as a stream', () => {
  let cert: string;
  let key: FederationKey;
  before(async () => {
    cert = (await generateSamlKeyPair('aggregate unit test IdP', NOW)).certificatePem;
    key = await federationKey('rsa');
  });

  /** An IdP entity with md:, ds:, shibmd:, mdui:, mdrpi: prefixes it does not declare itself. */
  const entity = (n: number | string, displayName = `University ${n}`) =>
    idpEntity({
      entityId: `https://idp${n}.example.org/idp`,
      scope: `uni${n}.example.org`,
      displayName,
      ssoUrl: `https://idp${n}.example.org/sso`,
      certificatePem: cert,
      registrationAuthority: 'https://www.surfconext.nl/',
    });

  /** The same entity in the default namespace (no md: prefix). */
  const unprefixed = (xml: string) => xml.replace(/(<\/?)md:/g, '$1');

  const read = (xml: string, onRoot: (root: MetadataRoot) => string | undefined = () => undefined) => {
    const out = streamProviders(xml, NOW, onRoot);
    assert.ok(out.ok, JSON.stringify(out));
    return out;
  };
  const ids = (xml: string) => read(xml).providers.map((p) => p.entityId);

  test('an entity using prefixes declared only on the root is read', () => {
    const xml = `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES} validUntil="2027-01-01T00:00:00Z">${entity(1)}${entity(2)}</md:EntitiesDescriptor>`;
    const out = read(xml);
    assert.deepEqual(
      out.providers.map((p) => [p.entityId, p.name, p.scopes, p.country, p.certificates.length]),
      [
        ['https://idp1.example.org/idp', 'University 1', ['uni1.example.org'], 'NL', 1],
        ['https://idp2.example.org/idp', 'University 2', ['uni2.example.org'], 'NL', 1],
      ],
    );
    assert.deepEqual(out.skipped, []);
  });

  test('a default-namespace aggregate is read', () => {
    const xml = `<EntitiesDescriptor xmlns="${MD}" ${PREFIXES} validUntil="2027-01-01T00:00:00Z">${unprefixed(entity(1))}${unprefixed(entity(2))}</EntitiesDescriptor>`;
    let root: MetadataRoot | undefined;
    const out = read(xml, (r) => void (root = r));
    assert.deepEqual(root, {
      uri: MD,
      local: 'EntitiesDescriptor',
      attributes: {
        xmlns: MD,
        'xmlns:ds': 'http://www.w3.org/2000/09/xmldsig#',
        'xmlns:shibmd': 'urn:mace:shibboleth:metadata:1.0',
        'xmlns:mdui': 'urn:oasis:names:tc:SAML:metadata:ui',
        'xmlns:mdrpi': 'urn:oasis:names:tc:SAML:metadata:rpi',
        validUntil: '2027-01-01T00:00:00Z',
      },
    });
    assert.deepEqual(
      out.providers.map((p) => p.entityId),
      ['https://idp1.example.org/idp', 'https://idp2.example.org/idp'],
    );
    // An element named EntityDescriptor in another namespace is not an entity.
    const foreign = `<EntitiesDescriptor xmlns="${MD}" ${PREFIXES}><x:EntityDescriptor xmlns:x="urn:other" entityID="https://other/idp"/>${unprefixed(entity(3))}</EntitiesDescriptor>`;
    assert.deepEqual(ids(foreign), ['https://idp3.example.org/idp']);
  });

  test('nested EntitiesDescriptors: every entity, in document order, with the scope of where it stands', () => {
    // The inner group binds the metadata namespace to x: too; entity 2 and the innermost group use it.
    const x = (xml: string) => xml.replace(/(<\/?)md:/g, '$1x:');
    const inner = `<md:EntitiesDescriptor xmlns:x="${MD}" Name="inner">${x(entity(2))}<x:EntitiesDescriptor>${entity(3)}</x:EntitiesDescriptor></md:EntitiesDescriptor>`;
    const xml = `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>${entity(1)}${inner}${entity(4)}</md:EntitiesDescriptor>`;
    const out = read(xml);
    assert.deepEqual(
      out.providers.map((p) => p.entityId),
      [1, 2, 3, 4].map((n) => `https://idp${n}.example.org/idp`),
    );
    assert.deepEqual(out.skipped, []);
  });

  test('the entities read are those a DOM of the whole document gives, wherever they stand', () => {
    // Schema-invalid places too: in the root's Extensions, inside another entity's Extensions.
    const inside = entity(2).replace(
      '<md:IDPSSODescriptor',
      `<md:Extensions>${entity(3)}</md:Extensions><md:IDPSSODescriptor`,
    );
    const xml =
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}><md:Extensions>${entity(1)}</md:Extensions>` +
      `${inside}<md:EntitiesDescriptor>${entity(4)}</md:EntitiesDescriptor></md:EntitiesDescriptor>`;
    const whole = providersOf(parseXmlStrictly(xml).documentElement, NOW);
    assert.deepEqual(
      whole.providers.map((p) => p.entityId),
      [1, 2, 3, 4].map((n) => `https://idp${n}.example.org/idp`),
    );
    const streamed = read(xml);
    assert.deepEqual(streamed, { ok: true, ...whole });
  });

  test('comments, processing instructions and escaped text that look like entities are not entities', () => {
    const lookalike = entity('evil');
    const escaped = lookalike.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    const inside = entity(1).replace(
      '<md:IDPSSODescriptor',
      `<!-- </md:EntityDescriptor>${lookalike} --><?pi </md:EntityDescriptor>${lookalike}?><md:IDPSSODescriptor`,
    );
    const xml =
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>` +
      `<!--${lookalike}--><?entity ${lookalike}?>` +
      `<md:Extensions><mdui:Description>${escaped}</mdui:Description></md:Extensions>` +
      `${inside}${entity(2, 'A < B & C') /* written A &lt; B &amp; C */}</md:EntitiesDescriptor>`;
    assert.ok(xml.includes('A &lt; B &amp; C'));
    const out = read(xml);
    assert.deepEqual(
      out.providers.map((p) => [p.entityId, p.name]),
      [
        ['https://idp1.example.org/idp', 'University 1'],
        ['https://idp2.example.org/idp', 'A < B & C'],
      ],
    );
  });

  test('an expired entity is skipped; an SP entity is not a provider', () => {
    const expired = entity(2).replace(
      '<md:EntityDescriptor ',
      '<md:EntityDescriptor validUntil="2026-11-26T11:59:59Z" ',
    );
    const sp = `<md:EntityDescriptor entityID="https://sp.example/"><md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>`;
    const out = read(
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>${entity(1)}${expired}${sp}</md:EntitiesDescriptor>`,
    );
    assert.deepEqual(
      out.providers.map((p) => p.entityId),
      ['https://idp1.example.org/idp'],
    );
    assert.deepEqual(out.skipped, ['https://idp2.example.org/idp expired (validUntil 2026-11-26T11:59:59Z)']);
  });

  test("a large text node (a logo as a data: URI) is read past sax's 64 KiB buffer", () => {
    const logo = `<mdui:Logo height="16" width="16">data:image/png;base64,${'A'.repeat(300_000)}</mdui:Logo>`;
    const big = entity(1).replace('</mdui:UIInfo>', `${logo}</mdui:UIInfo>`);
    assert.ok(big.length > 300_000);
    assert.deepEqual(
      ids(`<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>${big}${entity(2)}</md:EntitiesDescriptor>`),
      ['https://idp1.example.org/idp', 'https://idp2.example.org/idp'],
    );
  });

  test('a root EntityDescriptor is the one entity', () => {
    const xml = entity(1).replace('<md:EntityDescriptor ', `<md:EntityDescriptor xmlns:md="${MD}" ${PREFIXES} `);
    assert.deepEqual(ids(xml), ['https://idp1.example.org/idp']);
  });

  test('refused: a root the caller refuses (nothing else is read), malformed XML, a DTD', () => {
    let rootsSeen = 0;
    const refused = streamProviders(
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>${entity(1)}<broken</md:EntitiesDescriptor>`,
      NOW,
      (root) => (rootsSeen++, root.attributes.validUntil ? undefined : 'no validUntil'),
    );
    assert.deepEqual(refused, { ok: false, problem: 'no validUntil' });
    assert.equal(rootsSeen, 1);
    for (const bad of [
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>${entity(1)}`,
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>${entity(1)}</md:EntityDescriptor>`,
      `<md:EntitiesDescriptor xmlns:md="${MD}">${entity(1)}</md:EntitiesDescriptor>`,
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>&nbsp;${entity(1)}</md:EntitiesDescriptor>`,
      `<md:EntitiesDescriptor xmlns:md="${MD}" ${PREFIXES}>${entity(1)}</md:EntitiesDescriptor><x/>`,
    ])
      assert.throws(() => streamProviders(bad, NOW, () => undefined), /the XML is malformed/, bad.slice(-80));
    assert.throws(
      () => streamProviders(`<!DOCTYPE x><md:EntitiesDescriptor xmlns:md="${MD}"/>`, NOW, () => undefined),
      (err) => err instanceof XmlRefused && /document type declaration/.test(err.message),
    );
  });

  test('verifyAggregate: a default-namespace aggregate signed with inclusive C14N (declarations stay on the root)', () => {
    const xml = `<EntitiesDescriptor xmlns="${MD}" ${PREFIXES} ID="_agg" Name="urn:test:inclusive" validUntil="2027-01-01T00:00:00Z" cacheDuration="PT1H">${unprefixed(entity(1))}${unprefixed(entity(2))}</EntitiesDescriptor>`;
    const inclusive = 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315';
    const signer = withStrongAlgorithms(
      new SignedXml({
        privateKey: key.privateKeyPem,
        publicCert: key.certificatePem,
        canonicalizationAlgorithm: inclusive,
        signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
      }),
    );
    signer.addReference({
      xpath: "/*[local-name(.)='EntitiesDescriptor']",
      digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
      transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', inclusive],
    });
    signer.computeSignature(xml, {
      prefix: 'ds',
      location: { reference: "/*[local-name(.)='EntitiesDescriptor']", action: 'prepend' },
    });
    const out = verifyAggregate(signer.getSignedXml(), {
      signingCertificate: key.certificatePem,
      now: NOW,
      maxBytes: 1e6,
    });
    assert.ok(out.ok, JSON.stringify(out));
    assert.deepEqual(
      [out.providers.map((p) => p.entityId), out.name, out.validUntil, out.cacheDurationSeconds],
      [
        ['https://idp1.example.org/idp', 'https://idp2.example.org/idp'],
        'urn:test:inclusive',
        '2027-01-01T00:00:00.000Z',
        3600,
      ],
    );
  });

  test('a small aggregate is verified on the calling thread, a large one in a thread, with the same outcome', async () => {
    const aggregate = (n: number) =>
      signedAggregate(
        Array.from({ length: n }, (_, i) => entity(i)),
        key,
        { validUntil: new Date(NOW.getTime() + 86_400_000) },
      );
    const input = { signingCertificate: key.certificatePem, now: NOW, maxBytes: 1e7 };
    const small = aggregate(3);
    const large = aggregate(40);
    assert.ok(Buffer.byteLength(small) <= INLINE_MAX_BYTES && Buffer.byteLength(large) > INLINE_MAX_BYTES);
    const started = aggregateThreads.started;
    const inline = await verifyAggregateInThread(small, input);
    assert.equal(aggregateThreads.started, started, 'no thread for a small aggregate');
    assert.deepEqual(inline, verifyAggregate(small, input));
    assert.ok(inline.ok && inline.providers.length === 3, JSON.stringify(inline));
    const threaded = await verifyAggregateInThread(large, input);
    assert.equal(aggregateThreads.started, started + 1, 'a thread for a large one');
    assert.deepEqual(threaded, verifyAggregate(large, input));
    assert.ok(threaded.ok && threaded.providers.length === 40);
    // The small one in a thread too when told: the same outcome either way.
    assert.deepEqual(await verifyAggregateInThread(small, input, 0), inline);
    assert.equal(aggregateThreads.started, started + 2);
  });
});
