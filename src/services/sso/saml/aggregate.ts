import { X509Certificate } from 'node:crypto';
import { SignedXml } from 'xml-crypto';
import { providersOf, type IdpMetadata } from './idp-metadata.ts';
import { DECLARATIONS, NS, parseXmlStrictly } from './xml.ts';
import { withStrongAlgorithms } from './xmldsig-algorithms.ts';

/**
 * A federation's signed metadata aggregate (an eduGAIN-style md:EntitiesDescriptor), verified
 * before anything in it is used:
 * - size limit, then no DTD and well-formed (xml.ts), as for every SAML document;
 * - one enveloped XML signature on the root, checked by xml-crypto under the certificate the
 *   operator pinned (any KeyInfo in the document is ignored), RSA or ECDSA with SHA-256 or better;
 * - only what that signature covers is read: the canonical XML xml-crypto verified is parsed
 *   again and the entities are taken from it, so nothing wrapped around or beside the signed
 *   element (signature wrapping) can add an identity provider;
 * - the signed root must carry a `validUntil` in the future; `cacheDuration` tells when to refresh.
 */

export interface VerifiedAggregate {
  ok: true;
  providers: IdpMetadata[];
  skipped: string[];
  /** The root's Name attribute (eduGAIN: "urn:mace:…"), if any. */
  name?: string;
  validUntil: string;
  cacheDurationSeconds?: number;
}

export type AggregateOutcome = VerifiedAggregate | { ok: false; problem: string };

const fail = (problem: string): { ok: false; problem: string } => ({ ok: false, problem });

/** An xsd:duration (PnYnMnDTnHnMnS) in seconds; years and months as 365 and 30 days. */
export function durationSeconds(value: string): number | undefined {
  const m = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(
    value.trim(),
  );
  if (!m || value.trim() === 'P' || value.trim().endsWith('T')) return undefined;
  const [, y, mo, w, d, h, mi, s] = m.map((v) => Number(v ?? 0));
  return Math.round(y! * 31_536_000 + mo! * 2_592_000 + w! * 604_800 + d! * 86_400 + h! * 3600 + mi! * 60 + s!);
}

/** The first ds:Signature that is a child of the root element, as text: what xml-crypto loads. */
function rootSignature(xml: string): string | undefined {
  // The root's start tag ends at the first '>' after the first element name; its signature, when
  // enveloped as metadata signatures are, is among the first children. Which Signature is loaded
  // does not matter for safety: only the content it verifiably covers is used afterwards.
  const match = /<((?:[A-Za-z_][\w.-]*:)?)Signature[\s>][\s\S]*?<\/\1Signature>/.exec(xml);
  return match?.[0];
}

export function verifyAggregate(
  xml: string,
  input: { signingCertificate: string; now: Date; maxBytes: number },
): AggregateOutcome {
  if (Buffer.byteLength(xml, 'utf8') > input.maxBytes)
    return fail(`the metadata is larger than ${input.maxBytes} bytes`);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(input.signingCertificate);
  } catch {
    return fail('the signing certificate is not a PEM X.509 certificate');
  }
  // A DTD (so any entity) is refused before xml-crypto parses the text; what is then used is parsed
  // again, strictly, from the verified canonical form.
  if (DECLARATIONS.test(xml)) return fail('the XML has a document type declaration (DTD), which is refused');
  const signature = rootSignature(xml);
  if (!signature || !signature.includes(NS.ds)) return fail('the metadata is not signed');
  const signed = withStrongAlgorithms(
    new SignedXml({ publicCert: certificate.toString(), getCertFromKeyInfo: () => null }),
  );
  let references: string[];
  try {
    signed.loadSignature(signature);
    if (!signed.checkSignature(xml)) return fail('the metadata signature does not verify');
    references = signed.getSignedReferences();
  } catch (err) {
    return fail(`the metadata signature does not verify: ${String((err as Error).message ?? err).slice(0, 200)}`);
  }
  if (references.length !== 1) return fail('the metadata signature must cover exactly one element, the root');
  let root: Element;
  try {
    root = parseXmlStrictly(references[0]!).documentElement;
  } catch (err) {
    return fail((err as Error).message);
  }
  references.length = 0;
  if (root.namespaceURI !== NS.md || !['EntitiesDescriptor', 'EntityDescriptor'].includes(root.localName))
    return fail('the signed element is not md:EntitiesDescriptor (nor md:EntityDescriptor)');
  const validUntil = root.getAttribute('validUntil');
  if (!validUntil) return fail('the metadata has no validUntil: an aggregate without an end is refused');
  const until = Date.parse(validUntil);
  if (Number.isNaN(until)) return fail('the metadata validUntil is not a date');
  if (until <= input.now.getTime()) return fail(`the metadata expired (validUntil ${validUntil.slice(0, 40)})`);
  const cache = root.getAttribute('cacheDuration');
  const cacheDurationSeconds = cache ? durationSeconds(cache) : undefined;
  const { providers, skipped } = providersOf(root, input.now);
  const name = root.getAttribute('Name');
  return {
    ok: true,
    providers,
    skipped,
    ...(name ? { name: name.slice(0, 200) } : {}),
    validUntil: new Date(until).toISOString(),
    ...(cacheDurationSeconds !== undefined ? { cacheDurationSeconds } : {}),
  };
}
