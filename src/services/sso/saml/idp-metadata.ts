import { X509Certificate } from 'node:crypto';
import { children, descendants, NS, parseXmlStrictly, text } from './xml.ts';

/**
 * SAML 2.0 metadata of identity providers: one EntityDescriptor, or an EntitiesDescriptor
 * aggregate (a federation's). What a registry entry takes from it: the entityID, the signing
 * certificates, the HTTP-Redirect SingleSignOnService, the `shibmd:Scope`s (which affiliations it
 * may vouch for), the MDUI display name, and a country when the registration authority tells one.
 */
export interface IdpMetadata {
  entityId: string;
  name: string;
  scopes: string[];
  ssoUrl: string;
  certificates: string[];
  /** ISO 3166-1 alpha-2 when the metadata tells it. */
  country?: string;
}

const SAML2_PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';
const HTTP_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';

/** Registration authorities of national federations whose country their host does not show. */
const AUTHORITY_COUNTRIES: Record<string, string> = {
  'incommon.org': 'US',
  'www.incommon.org': 'US',
  'ukfederation.org.uk': 'GB',
  'www.ukfederation.org.uk': 'GB',
  'aaf.edu.au': 'AU',
};

function certificatePem(base64: string): string | undefined {
  const body = base64.replace(/\s+/g, '');
  const pem = `-----BEGIN CERTIFICATE-----\n${body.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  try {
    new X509Certificate(pem);
    return pem;
  } catch {
    return undefined;
  }
}

/** Entity attributes that name a country (X.520 countryName). */
const COUNTRY_ATTRIBUTES = new Set(['urn:oid:2.5.4.6', 'c', 'countryName']);

/** A country an `mdattr:EntityAttributes` attribute states, if one does. */
function attributeCountry(entity: Element): string | undefined {
  for (const attributes of descendants(entity, NS.mdattr, 'EntityAttributes'))
    for (const attribute of children(attributes, NS.saml, 'Attribute'))
      if (COUNTRY_ATTRIBUTES.has(attribute.getAttribute('Name') ?? '')) {
        const value = text(children(attribute, NS.saml, 'AttributeValue')[0]).toUpperCase();
        if (/^[A-Z]{2}$/.test(value)) return value;
      }
  return undefined;
}

function countryOf(entity: Element): string | undefined {
  const stated = attributeCountry(entity);
  if (stated) return stated;
  const info = descendants(entity, NS.mdrpi, 'RegistrationInfo')[0];
  const authority = info?.getAttribute('registrationAuthority');
  if (!authority) return undefined;
  let host: string;
  try {
    host = new URL(authority).hostname.toLowerCase();
  } catch {
    return undefined;
  }
  if (AUTHORITY_COUNTRIES[host]) return AUTHORITY_COUNTRIES[host];
  const tld = host.split('.').pop() ?? '';
  return /^[a-z]{2}$/.test(tld) && tld !== 'eu' ? (tld === 'uk' ? 'GB' : tld.toUpperCase()) : undefined;
}

function displayName(entity: Element, idp: Element): string {
  const names = descendants(idp, NS.mdui, 'DisplayName');
  const english = names.find((n) => n.getAttribute('xml:lang') === 'en') ?? names[0];
  const organization = descendants(entity, NS.md, 'OrganizationDisplayName')[0];
  return text(english) || text(organization) || entity.getAttribute('entityID') || '';
}

/** One entity's IdP role, or why it cannot be used. */
function readEntity(entity: Element): IdpMetadata | { problem: string } {
  const entityId = entity.getAttribute('entityID') ?? '';
  if (!entityId || entityId.length > 1024) return { problem: 'an EntityDescriptor has no usable entityID' };
  const idp = children(entity, NS.md, 'IDPSSODescriptor').find((d) =>
    (d.getAttribute('protocolSupportEnumeration') ?? '').split(/\s+/).includes(SAML2_PROTOCOL),
  );
  if (!idp) return { problem: `${entityId} has no SAML 2.0 IDPSSODescriptor` };
  const certificates = children(idp, NS.md, 'KeyDescriptor')
    .filter((k) => (k.getAttribute('use') ?? 'signing') === 'signing')
    .flatMap((k) => descendants(k, NS.ds, 'X509Certificate').map((c) => certificatePem(text(c))))
    .filter((pem): pem is string => pem !== undefined);
  if (certificates.length === 0) return { problem: `${entityId} has no usable signing certificate` };
  const sso = children(idp, NS.md, 'SingleSignOnService').find((s) => s.getAttribute('Binding') === HTTP_REDIRECT);
  const ssoUrl = sso?.getAttribute('Location') ?? '';
  if (!/^https?:\/\//.test(ssoUrl)) return { problem: `${entityId} has no HTTP-Redirect SingleSignOnService` };
  // Scopes given as regular expressions are not trusted: an exact domain or nothing.
  const scopes = [
    ...new Set(
      [
        ...descendants(idp, NS.shibmd, 'Scope'),
        ...children(entity, NS.md, 'Extensions').flatMap((e) => children(e, NS.shibmd, 'Scope')),
      ]
        .filter((s) => s.getAttribute('regexp') !== 'true' && s.getAttribute('regexp') !== '1')
        .map((s) => text(s).toLowerCase())
        .filter((s) => /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/.test(s)),
    ),
  ];
  if (scopes.length === 0) return { problem: `${entityId} has no shibmd:Scope (the domain it may vouch for)` };
  const country = countryOf(entity);
  return {
    entityId,
    name: displayName(entity, idp).slice(0, 200),
    scopes,
    ssoUrl,
    certificates,
    ...(country ? { country } : {}),
  };
}

export type ParsedMetadata =
  { ok: true; providers: IdpMetadata[]; skipped: string[]; root: Element } | { ok: false; problem: string };

/** Every usable identity provider of a metadata document, and why the others were skipped. */
export function parseIdpMetadata(xml: string): ParsedMetadata {
  let doc: Document;
  try {
    doc = parseXmlStrictly(xml);
  } catch (err) {
    return { ok: false, problem: (err as Error).message };
  }
  const root = doc.documentElement;
  if (root.namespaceURI !== NS.md || !['EntityDescriptor', 'EntitiesDescriptor'].includes(root.localName))
    return { ok: false, problem: 'this is not SAML 2.0 metadata (no md:EntityDescriptor or md:EntitiesDescriptor)' };
  return { ok: true, ...providersOf(root), root };
}

/**
 * The identity providers under a metadata root already parsed (and, for an aggregate, verified):
 * entities whose own `validUntil` is before `now` are skipped.
 */
export function providersOf(root: Element, now?: Date): { providers: IdpMetadata[]; skipped: string[] } {
  return providersAmong(
    root.localName === 'EntityDescriptor' ? [root] : descendants(root, NS.md, 'EntityDescriptor'),
    now,
  );
}

/** The identity providers among `entities` (md:EntityDescriptor elements), as providersOf. */
export function providersAmong(entities: Element[], now?: Date): { providers: IdpMetadata[]; skipped: string[] } {
  const providers: IdpMetadata[] = [];
  const skipped: string[] = [];
  for (const entity of entities) {
    if (children(entity, NS.md, 'IDPSSODescriptor').length === 0) continue;
    const validUntil = entity.getAttribute('validUntil');
    if (now && validUntil && !(Date.parse(validUntil) > now.getTime())) {
      skipped.push(
        `${(entity.getAttribute('entityID') ?? '').slice(0, 200)} expired (validUntil ${validUntil.slice(0, 40)})`,
      );
      continue;
    }
    const read = readEntity(entity);
    if ('problem' in read) skipped.push(read.problem);
    else providers.push(read);
  }
  return { providers, skipped };
}
