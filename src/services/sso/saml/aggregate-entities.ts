import sax from 'sax';
import { providersAmong, providersOf, type IdpMetadata } from './idp-metadata.ts';
import { DECLARATIONS, descendants, NS, parseXmlStrictly, XmlRefused } from './xml.ts';

/**
 * The identity providers of a federation aggregate's verified canonical XML, read without a DOM of
 * the whole document: eduGAIN's is thousands of entities, and a DOM of it costs several times its
 * size on top of the one xml-crypto already built to verify it.
 *
 * The text is streamed once with sax (strict, namespace-aware, XML's five entities only): the
 * root's start tag gives its name, namespace and attributes, and each outermost
 * `md:EntityDescriptor` (wherever it is: under the root, under a nested `md:EntitiesDescriptor`) is
 * cut out of the text and parsed on its own with parseXmlStrictly, with the namespace bindings in
 * scope where it stood as the parser's context, as if wrapped in an element declaring them
 * (exclusive C14N pushes declarations down to where they are used, inclusive C14N leaves them on
 * the root: both read the same). Comments, processing instructions and text are sax's to skip, so
 * a `<md:EntityDescriptor` inside one is never cut out. The entities read are those a DOM of the
 * whole would have given (every md:EntityDescriptor descendant of the root, in document order); one
 * small DOM is alive at a time, and the strings taken from it are slices of the canonical text,
 * not copies.
 */

export interface MetadataRoot {
  /** Namespace URI and local name of the root element. */
  uri: string;
  local: string;
  /** Its attributes, by qualified name. */
  attributes: Record<string, string>;
}

/** The bindings of a sax scope (a prototype chain, xml: and xmlns: at its end) as one object. */
function bindings(scope: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const prefix in scope) if (prefix !== 'xml' && prefix !== 'xmlns') out[prefix] = scope[prefix]!;
  return out;
}

class Stop extends Error {}

/**
 * Streams `xml` (a verified canonical metadata document): `onRoot` sees the root first and may
 * refuse it (its answer, a problem, ends the reading); then the providers. Throws XmlRefused when
 * the text is not well-formed XML or has a DTD.
 */
export function streamProviders(
  xml: string,
  now: Date | undefined,
  onRoot: (root: MetadataRoot) => string | undefined,
): { ok: true; providers: IdpMetadata[]; skipped: string[] } | { ok: false; problem: string } {
  if (DECLARATIONS.test(xml)) throw new XmlRefused('the XML has a document type declaration (DTD), which is refused');
  // strictEntities (sax ≥ 1.2.5, not in @types/sax): &amp; &lt; &gt; &quot; &apos; only, as XML.
  const parser = sax.parser(true, { xmlns: true, strictEntities: true, position: true } as sax.SAXOptions);
  const providers: IdpMetadata[] = [];
  const skipped: string[] = [];
  /** The namespace scope of each open element, root first. */
  const scopes: Record<string, string>[] = [];
  let rootSeen = false;
  let rootIsEntity = false;
  let problem: string | undefined;
  /** The entity being cut out: where its start tag began, its depth, the bindings in scope there. */
  let entity: { start: number; depth: number; name: string; scope: Record<string, string> } | undefined;
  parser.onerror = (err) => {
    throw new XmlRefused(`the XML is malformed: ${String(err.message).split('\n')[0]!.slice(0, 200)}`);
  };
  parser.ondoctype = () => {
    throw new XmlRefused('the XML has a document type declaration (DTD), which is refused');
  };
  parser.onopentag = (node) => {
    const tag = node as sax.QualifiedTag;
    scopes.push(tag.ns);
    const depth = scopes.length;
    if (depth === 1) {
      // sax reads on past the root's end tag; XML has one root.
      if (rootSeen) throw new XmlRefused('the XML is malformed: more than one root element');
      rootSeen = true;
      const attributes: Record<string, string> = {};
      for (const [name, attribute] of Object.entries(tag.attributes)) attributes[name] = attribute.value;
      problem = onRoot({ uri: tag.uri, local: tag.local, attributes });
      if (problem) throw new Stop();
      rootIsEntity = tag.uri === NS.md && tag.local === 'EntityDescriptor';
    }
    if (entity || tag.uri !== NS.md || tag.local !== 'EntityDescriptor') return;
    const start = parser.startTagPosition - 1;
    if (!xml.startsWith(`<${tag.name}`, start)) throw new XmlRefused('the XML could not be read (start tag)');
    entity = { start, depth, name: tag.name, scope: depth > 1 ? bindings(scopes[depth - 2]!) : {} };
  };
  parser.onclosetag = (name) => {
    scopes.pop();
    if (!entity || scopes.length !== entity.depth - 1) return;
    const end = parser.position;
    if (name !== entity.name || xml.charCodeAt(end - 1) !== 62 /* > */)
      throw new XmlRefused('the XML could not be read (end tag)');
    // A slice, not a copy: the strings the DOM (and the providers) take from it are slices of `xml`.
    const element = parseXmlStrictly(xml.slice(entity.start, end), entity.scope).documentElement;
    const read = rootIsEntity
      ? providersOf(element, now)
      : providersAmong([element, ...descendants(element, NS.md, 'EntityDescriptor')], now);
    for (const p of read.providers) providers.push(p);
    for (const s of read.skipped) skipped.push(s);
    entity = undefined;
  };
  try {
    parser.write(xml).close();
  } catch (err) {
    if (err instanceof Stop) return { ok: false, problem: problem! };
    throw err;
  }
  return { ok: true, providers, skipped };
}
