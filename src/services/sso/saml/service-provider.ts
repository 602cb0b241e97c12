import { generateServiceProviderMetadata, SAML, ValidateInResponseTo, type SamlConfig } from '@node-saml/node-saml';
import type { Clock } from '../../../domain/clock.ts';
import type { IdentityProvider } from '../../../domain/identity-providers.ts';
import { SAML_ATTRIBUTES } from '../../../domain/identity-providers.ts';
import { XMLSerializer } from '@xmldom/xmldom';
import type { SamlKeyPair } from './sp-keys.ts';
import { children, NS, parseXmlStrictly } from './xml.ts';

/** The SP's identifiers: its entityID is the metadata's own address, the ACS where responses are posted. */
export function spEndpoints(baseUrl: string) {
  return {
    entityId: `${baseUrl}/saml/v1/metadata`,
    acsUrl: `${baseUrl}/saml/v1/acs`,
  };
}

/** Times in a response may be this far off the service clock, no more (docs/university-login.md). */
export const CLOCK_SKEW_MS = 60_000;

const TRANSIENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient';

/**
 * node-saml, with every time check on the service clock (node-saml reads the system clock): the
 * same TestClock moves sessions, requests and assertions in tests.
 */
class ClockedSaml extends SAML {
  constructor(
    options: SamlConfig,
    private readonly clock: Clock,
  ) {
    super(options);
  }

  protected override checkTimestampsValidityError(
    _nowMs: number,
    notBefore: string,
    notOnOrAfter: string,
    maxTimeLimitMs?: number,
  ): Error | null {
    return super.checkTimestampsValidityError(this.clock.now().getTime(), notBefore, notOnOrAfter, maxTimeLimitMs);
  }
}

/** node-saml configured for one identity provider: its certificates are the only keys trusted. */
export function samlFor(input: {
  baseUrl: string;
  keys: SamlKeyPair;
  idp: IdentityProvider;
  clock: Clock;
  requestId?: string;
}): SAML {
  const { entityId, acsUrl } = spEndpoints(input.baseUrl);
  return new ClockedSaml(
    {
      issuer: entityId,
      audience: entityId,
      callbackUrl: acsUrl,
      entryPoint: input.idp.saml?.ssoUrl,
      idpCert: input.idp.saml?.certificates ?? [],
      privateKey: input.keys.privateKeyPem,
      decryptionPvk: input.keys.privateKeyPem,
      signatureAlgorithm: 'sha256',
      identifierFormat: TRANSIENT,
      allowCreate: true,
      disableRequestedAuthnContext: true,
      // Either the response or the assertion must be signed by the IdP (node-saml checks the
      // assertion's signature whenever the response carries none).
      wantAuthnResponseSigned: false,
      wantAssertionsSigned: false,
      acceptedClockSkewMs: CLOCK_SKEW_MS,
      // InResponseTo is bound to the session and the browser by the caller (sso_requests).
      validateInResponseTo: ValidateInResponseTo.never,
      ...(input.requestId ? { generateUniqueId: () => input.requestId! } : {}),
    },
    input.clock,
  );
}

/**
 * The SP's metadata (SAML 2.0): entityID, the ACS (HTTP-POST), the signing and encryption
 * certificate, transient NameIDs, and what is asked for: the MDUI display name and, as requested
 * attributes, only the affiliation and its scope. Nothing that names the student.
 */
export function spMetadataXml(input: { baseUrl: string; keys: SamlKeyPair; displayName: string }): string {
  const { entityId, acsUrl } = spEndpoints(input.baseUrl);
  const xml = generateServiceProviderMetadata({
    issuer: entityId,
    callbackUrl: acsUrl,
    identifierFormat: TRANSIENT,
    wantAssertionsSigned: true,
    publicCerts: input.keys.certificatePem,
    privateKey: input.keys.privateKeyPem,
    signatureAlgorithm: 'sha256',
    decryptionCert: input.keys.certificatePem,
    decryptionPvk: input.keys.privateKeyPem,
  });
  const doc = parseXmlStrictly(xml);
  const sp = children(doc.documentElement, NS.md, 'SPSSODescriptor')[0]!;
  const md = (name: string) => doc.createElementNS(NS.md, `md:${name}`);
  // Extensions come first in an SPSSODescriptor, AttributeConsumingService last (the schema's order).
  const extensions = md('Extensions');
  const uiInfo = doc.createElementNS(NS.mdui, 'mdui:UIInfo');
  const name = doc.createElementNS(NS.mdui, 'mdui:DisplayName');
  name.setAttribute('xml:lang', 'en');
  name.appendChild(doc.createTextNode(input.displayName));
  uiInfo.appendChild(name);
  extensions.appendChild(uiInfo);
  sp.insertBefore(extensions, sp.firstChild);
  const service = md('AttributeConsumingService');
  service.setAttribute('index', '1');
  const serviceName = md('ServiceName');
  serviceName.setAttribute('xml:lang', 'en');
  serviceName.appendChild(doc.createTextNode(input.displayName));
  service.appendChild(serviceName);
  for (const [names, required] of [
    [SAML_ATTRIBUTES.scopedAffiliation, true],
    [SAML_ATTRIBUTES.affiliation, false],
    [SAML_ATTRIBUTES.homeOrganization, false],
  ] as const) {
    const attribute = md('RequestedAttribute');
    attribute.setAttribute('FriendlyName', names[1]);
    attribute.setAttribute('Name', names[0]);
    attribute.setAttribute('NameFormat', 'urn:oasis:names:tc:SAML:2.0:attrname-format:uri');
    attribute.setAttribute('isRequired', String(required));
    service.appendChild(attribute);
  }
  sp.appendChild(service);
  return new XMLSerializer().serializeToString(doc);
}
