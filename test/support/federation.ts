import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { SignedXml } from 'xml-crypto';
import { ECDSA_SHA256, withStrongAlgorithms } from '../../src/services/sso/saml/xmldsig-algorithms.ts';

/**
 * A synthetic federation metadata aggregate, as eduGAIN or a national federation publishes one:
 * IdP entities (MDUI display name, shibmd:Scope, signing certificate, HTTP-Redirect SSO, a
 * registration authority or a country entity attribute), signed by xml-crypto (a library we did
 * not write) with a test federation key, RSA-SHA256 or ECDSA-SHA256 (or RSA-SHA1 to be refused).
 */

const NAMESPACES =
  'xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" ' +
  'xmlns:shibmd="urn:mace:shibboleth:metadata:1.0" xmlns:mdui="urn:oasis:names:tc:SAML:metadata:ui" ' +
  'xmlns:mdrpi="urn:oasis:names:tc:SAML:metadata:rpi" xmlns:mdattr="urn:oasis:names:tc:SAML:metadata:attribute" ' +
  'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"';

export interface FederationKey {
  privateKeyPem: string;
  certificatePem: string;
  kind: 'rsa' | 'ecdsa';
}

/** A self-signed federation signing key: RSA-2048 or ECDSA P-256. */
export async function federationKey(kind: 'rsa' | 'ecdsa' = 'rsa'): Promise<FederationKey> {
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const algorithm =
    kind === 'rsa'
      ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 }
      : { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: `01${randomBytes(15).toString('hex')}`,
    name: 'CN=Test Federation metadata signer',
    notBefore: new Date(now - 86_400_000),
    notAfter: new Date(now + 365 * 86_400_000),
    signingAlgorithm: algorithm,
    keys,
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return {
    privateKeyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'),
    certificatePem: certificate.toString('pem'),
    kind,
  };
}

export interface EntityOptions {
  entityId: string;
  scope: string;
  displayName: string;
  ssoUrl: string;
  /** PEM of the IdP's signing certificate. */
  certificatePem: string;
  registrationAuthority?: string;
  /** Stated as an mdattr:EntityAttributes countryName attribute. */
  country?: string;
}

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

export function idpEntity(o: EntityOptions): string {
  const certificate = o.certificatePem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const registration = o.registrationAuthority
    ? `<mdrpi:RegistrationInfo registrationAuthority="${escapeXml(o.registrationAuthority)}"/>`
    : '';
  const country = o.country
    ? `<mdattr:EntityAttributes><saml:Attribute Name="urn:oid:2.5.4.6"><saml:AttributeValue>${o.country}</saml:AttributeValue></saml:Attribute></mdattr:EntityAttributes>`
    : '';
  const extensions = registration || country ? `<md:Extensions>${registration}${country}</md:Extensions>` : '';
  return (
    `<md:EntityDescriptor entityID="${escapeXml(o.entityId)}">${extensions}` +
    `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
    `<md:Extensions><shibmd:Scope regexp="false">${o.scope}</shibmd:Scope><mdui:UIInfo>` +
    `<mdui:DisplayName xml:lang="en">${escapeXml(o.displayName)}</mdui:DisplayName></mdui:UIInfo></md:Extensions>` +
    `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
    `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${escapeXml(o.ssoUrl)}"/>` +
    `</md:IDPSSODescriptor></md:EntityDescriptor>`
  );
}

/** A service provider entity: in every real aggregate, never a registry entry. */
export function spEntity(entityId: string): string {
  return (
    `<md:EntityDescriptor entityID="${escapeXml(entityId)}"><md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
    `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://sp.example/acs" index="0"/>` +
    `</md:SPSSODescriptor></md:EntityDescriptor>`
  );
}

export interface AggregateOptions {
  validUntil: Date;
  cacheDuration?: string;
  name?: string;
  /** Sign with RSA-SHA1 (to be refused). */
  sha1?: boolean;
}

/** The entities in a signed md:EntitiesDescriptor (enveloped signature, exclusive C14N, SHA-256). */
export function signedAggregate(entities: string[], key: FederationKey, o: AggregateOptions): string {
  const id = `_${randomBytes(12).toString('hex')}`;
  const xml =
    `<md:EntitiesDescriptor ${NAMESPACES} ID="${id}" Name="${escapeXml(o.name ?? 'urn:mace:test:federation')}" ` +
    `validUntil="${o.validUntil.toISOString()}"${o.cacheDuration ? ` cacheDuration="${o.cacheDuration}"` : ''}>` +
    entities.join('') +
    `</md:EntitiesDescriptor>`;
  const exc = 'http://www.w3.org/2001/10/xml-exc-c14n#';
  const signer = new SignedXml({
    privateKey: key.privateKeyPem,
    publicCert: key.certificatePem,
    canonicalizationAlgorithm: exc,
    signatureAlgorithm: o.sha1
      ? 'http://www.w3.org/2000/09/xmldsig#rsa-sha1'
      : key.kind === 'ecdsa'
        ? ECDSA_SHA256
        : 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  });
  if (!o.sha1) withStrongAlgorithms(signer);
  signer.addReference({
    xpath: "/*[local-name(.)='EntitiesDescriptor']",
    digestAlgorithm: o.sha1 ? 'http://www.w3.org/2000/09/xmldsig#sha1' : 'http://www.w3.org/2001/04/xmlenc#sha256',
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', exc],
  });
  signer.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: "/*[local-name(.)='EntitiesDescriptor']", action: 'prepend' },
  });
  return signer.getSignedXml();
}

/** `count` synthetic IdPs sharing one certificate (as the benchmark's 5,000). */
export function syntheticEntities(count: number, certificatePem: string, prefix = 'https://idp'): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i++)
    out.push(
      idpEntity({
        entityId: `${prefix}${i}.example.org/idp`,
        scope: `uni${i}.example.org`,
        displayName: `University number ${i}`,
        ssoUrl: `${prefix}${i}.example.org/sso`,
        certificatePem,
        registrationAuthority: 'https://www.surfconext.nl/',
      }),
    );
  return out;
}
