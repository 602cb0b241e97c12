import { DOMParser } from '@xmldom/xmldom';

/**
 * The one way SAML XML is parsed here: a document type declaration is refused before parsing
 * (no DTD, so no entity of any kind, internal or external, and no entity expansion), and so is
 * anything the parser finds malformed. Checked on the string that is then parsed, so no encoding
 * trick can show the check one text and the parser another.
 */
export class XmlRefused extends Error {}

export const DECLARATIONS = /<!(DOCTYPE|ENTITY|ELEMENT|ATTLIST|NOTATION)/i;

/**
 * `namespaces` (prefix → URI, '' the default namespace): bindings in scope before the text's first
 * element, for an element cut out of a larger document where its ancestors declared them.
 */
export function parseXmlStrictly(text: string, namespaces?: Record<string, string>): Document {
  if (DECLARATIONS.test(text)) throw new XmlRefused('the XML has a document type declaration (DTD), which is refused');
  const fail = (message: string) => {
    throw new XmlRefused(`the XML is malformed: ${String(message).slice(0, 200)}`);
  };
  const doc = new DOMParser({
    errorHandler: { warning: () => undefined, error: fail, fatalError: fail },
    ...(namespaces ? { xmlns: { ...namespaces } } : {}),
  }).parseFromString(text, 'text/xml');
  if (!doc?.documentElement) throw new XmlRefused('the XML has no root element');
  return doc as unknown as Document;
}

export const NS = {
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  shibmd: 'urn:mace:shibboleth:metadata:1.0',
  mdui: 'urn:oasis:names:tc:SAML:metadata:ui',
  mdrpi: 'urn:oasis:names:tc:SAML:metadata:rpi',
  mdattr: 'urn:oasis:names:tc:SAML:metadata:attribute',
  xenc: 'http://www.w3.org/2001/04/xmlenc#',
} as const;

/** Element children of `parent` in `ns` named `local`. */
export function children(parent: Element, ns: string, local: string): Element[] {
  const out: Element[] = [];
  for (let node = parent.firstChild; node; node = node.nextSibling)
    if (node.nodeType === 1 && (node as Element).namespaceURI === ns && (node as Element).localName === local)
      out.push(node as Element);
  return out;
}

/** Every descendant of `parent` in `ns` named `local`. */
export function descendants(parent: Element | Document, ns: string, local: string): Element[] {
  return Array.from(parent.getElementsByTagNameNS(ns, local));
}

export function text(element: Element | undefined): string {
  return (element?.textContent ?? '').trim();
}
