import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import { SignedXml } from 'xml-crypto';
import type { Clock } from '../../domain/clock.ts';
import { newId } from '../../domain/ids.ts';
import { SAML_ATTRIBUTES } from '../../domain/identity-providers.ts';
import { SANDBOX_UNIVERSITIES } from '../../proofs/sandbox-universities.ts';
import type { Db } from '../../store/db.ts';
import { findIdentityProviderByEntity, insertIdentityProvider } from '../../store/identity-providers.ts';
import type { ServiceDeps } from '../deps.ts';
import { spEndpoints } from './saml/service-provider.ts';
import { storedKeyPair, type SamlKeyPair } from './saml/sp-keys.ts';
import { NS, parseXmlStrictly, text } from './saml/xml.ts';

/**
 * The built-in sandbox identity provider: a "Sandbox State University" login with a student and a
 * staff account, so that university login can be tried with no federation. It is a SAML IdP like
 * any other to the service provider (its own generated key, its metadata, a signed assertion by
 * HTTP-POST) and is trusted for sandbox sessions only.
 */
const UNIVERSITY = SANDBOX_UNIVERSITIES[0]!;
export const SANDBOX_UNIVERSITY_NAME = UNIVERSITY.name;
export const SANDBOX_ACCOUNTS = ['student', 'staff'] as const;
export type SandboxAccount = (typeof SANDBOX_ACCOUNTS)[number];

export function sandboxIdpEndpoints(baseUrl: string) {
  return {
    entityId: `${baseUrl}/sandbox/idp/v1/metadata`,
    ssoUrl: `${baseUrl}/sandbox/idp/v1/sso`,
  };
}

function sandboxIdpKeys(deps: { db: Db; clock: Clock; config: { baseUrl: string } }): Promise<SamlKeyPair> {
  const host = new URL(deps.config.baseUrl).hostname;
  return storedKeyPair(deps, `sandbox-idp:${host}`, `${UNIVERSITY.name} (sandbox IdP)`);
}

const certificateBody = (pem: string) => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');

/** Its metadata, with the scope it vouches for. */
export async function sandboxIdpMetadata(deps: Pick<ServiceDeps, 'db' | 'clock' | 'config'>): Promise<string> {
  const keys = await sandboxIdpKeys(deps);
  const { entityId, ssoUrl } = sandboxIdpEndpoints(deps.config.baseUrl);
  return `<md:EntityDescriptor xmlns:md="${NS.md}" xmlns:ds="${NS.ds}" xmlns:shibmd="${NS.shibmd}" xmlns:mdui="${NS.mdui}" entityID="${entityId}"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:Extensions><shibmd:Scope regexp="false">${UNIVERSITY.domain}</shibmd:Scope><mdui:UIInfo><mdui:DisplayName xml:lang="en">${UNIVERSITY.name}</mdui:DisplayName></mdui:UIInfo></md:Extensions><md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(keys.certificatePem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor><md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:transient</md:NameIDFormat><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${ssoUrl}"/></md:IDPSSODescriptor></md:EntityDescriptor>`;
}

/** Registers the sandbox IdP for sandbox sessions on first start; an existing entry is left alone. */
export async function seedSandboxIdentityProvider(
  deps: Pick<ServiceDeps, 'db' | 'clock' | 'config'>,
): Promise<boolean> {
  const { entityId, ssoUrl } = sandboxIdpEndpoints(deps.config.baseUrl);
  if (await findIdentityProviderByEntity(deps.db, 'sandbox', entityId)) return false;
  const keys = await sandboxIdpKeys(deps);
  return insertIdentityProvider(deps.db, {
    id: newId('identityProvider', deps.clock),
    environment: 'sandbox',
    protocol: 'saml',
    entityId,
    name: UNIVERSITY.name,
    domain: UNIVERSITY.domain,
    country: UNIVERSITY.country,
    scopes: [UNIVERSITY.domain],
    saml: { ssoUrl, certificates: [keys.certificatePem] },
    federation: null,
    createdAt: deps.clock.now().toISOString(),
    clientSecretSealed: null,
  });
}

export interface SandboxLoginRequest {
  requestId: string;
  relayState: string;
}

/**
 * Reads an AuthnRequest sent to the sandbox IdP by HTTP-Redirect: its signature by our SP key
 * (over the query's octets, as the binding says), the ACS it names, and its ID.
 */
export async function readSandboxLoginRequest(
  deps: Pick<ServiceDeps, 'config' | 'samlKeys'>,
  rawQuery: string,
): Promise<SandboxLoginRequest | { problem: string }> {
  const pairs = rawQuery.split('&');
  const value = (name: string) => {
    const pair = pairs.find((p) => p.startsWith(`${name}=`));
    return pair === undefined ? undefined : decodeURIComponent(pair.slice(name.length + 1).replace(/\+/g, ' '));
  };
  const request = value('SAMLRequest');
  const signature = value('Signature');
  if (!request || !signature || value('SigAlg') !== 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256')
    return { problem: 'the request is not a signed SAML AuthnRequest (RSA-SHA256)' };
  const signed = pairs.filter((p) => /^(SAMLRequest|RelayState|SigAlg)=/.test(p)).join('&');
  const keys = await deps.samlKeys();
  if (
    !verify('RSA-SHA256', Buffer.from(signed), createPublicKey(keys.certificatePem), Buffer.from(signature, 'base64'))
  )
    return { problem: 'the request is not signed by this service provider' };
  let root: Element;
  try {
    root = parseXmlStrictly(
      inflateRawSync(Buffer.from(request, 'base64'), { maxOutputLength: 65_536 }).toString('utf8'),
    ).documentElement;
  } catch {
    return { problem: 'the request is not readable' };
  }
  const { acsUrl, entityId } = spEndpoints(deps.config.baseUrl);
  const issuer = text(root.getElementsByTagNameNS(NS.saml, 'Issuer')[0] as unknown as Element);
  if (
    root.localName !== 'AuthnRequest' ||
    root.getAttribute('AssertionConsumerServiceURL') !== acsUrl ||
    issuer !== entityId
  )
    return { problem: 'the request is not from this service provider' };
  const requestId = root.getAttribute('ID') ?? '';
  if (!/^[A-Za-z_][\w.-]{0,80}$/.test(requestId)) return { problem: 'the request has no usable ID' };
  return { requestId, relayState: (value('RelayState') ?? '').slice(0, 80) };
}

const escape = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A signed SAML response of the sandbox IdP for `account`, base64: what its login page posts to the ACS. */
export async function sandboxLoginResponse(
  deps: Pick<ServiceDeps, 'db' | 'clock' | 'config'>,
  request: SandboxLoginRequest,
  account: SandboxAccount,
): Promise<string> {
  const keys = await sandboxIdpKeys(deps);
  const { entityId: issuer } = sandboxIdpEndpoints(deps.config.baseUrl);
  const { acsUrl, entityId: audience } = spEndpoints(deps.config.baseUrl);
  const now = deps.clock.now();
  const later = new Date(now.getTime() + 5 * 60_000).toISOString();
  const id = (prefix: string) => `_${prefix}${randomBytes(16).toString('hex')}`;
  const inResponseTo = escape(request.requestId);
  const assertion =
    `<saml:Assertion xmlns:saml="${NS.saml}" ID="${id('a')}" Version="2.0" IssueInstant="${now.toISOString()}">` +
    `<saml:Issuer>${escape(issuer)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:transient">${id('n')}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${later}" Recipient="${escape(acsUrl)}" InResponseTo="${inResponseTo}"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${now.toISOString()}" NotOnOrAfter="${later}"><saml:AudienceRestriction><saml:Audience>${escape(audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${now.toISOString()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `<saml:AttributeStatement><saml:Attribute Name="${SAML_ATTRIBUTES.scopedAffiliation[0]}" FriendlyName="${SAML_ATTRIBUTES.scopedAffiliation[1]}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri"><saml:AttributeValue>${account}@${UNIVERSITY.domain}</saml:AttributeValue></saml:Attribute></saml:AttributeStatement>` +
    `</saml:Assertion>`;
  const xml =
    `<samlp:Response xmlns:samlp="${NS.samlp}" ID="${id('r')}" Version="2.0" IssueInstant="${now.toISOString()}" Destination="${escape(acsUrl)}" InResponseTo="${inResponseTo}">` +
    `<saml:Issuer xmlns:saml="${NS.saml}">${escape(issuer)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>${assertion}</samlp:Response>`;
  const signer = new SignedXml({
    privateKey: keys.privateKeyPem,
    publicCert: keys.certificatePem,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  signer.addReference({
    xpath: "//*[local-name(.)='Assertion']",
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
  });
  signer.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: "//*[local-name(.)='Assertion']/*[local-name(.)='Issuer']", action: 'after' },
  });
  return Buffer.from(signer.getSignedXml(), 'utf8').toString('base64');
}
