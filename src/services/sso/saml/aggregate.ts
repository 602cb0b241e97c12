import { X509Certificate } from 'node:crypto';
import { SignedXml } from 'xml-crypto';
import { streamProviders, type MetadataRoot } from './aggregate-entities.ts';
import type { IdpMetadata } from './idp-metadata.ts';
import { DECLARATIONS, NS } from './xml.ts';
import { withStrongAlgorithms } from './xmldsig-algorithms.ts';

/**
 * A federation's signed metadata aggregate (an eduGAIN-style md:EntitiesDescriptor), verified
 * before anything in it is used:
 * - size limit, then no DTD and well-formed (xml.ts), as for every SAML document;
 * - one enveloped XML signature on the root, checked by xml-crypto under the certificate the
 *   operator pinned (any KeyInfo in the document is ignored), RSA or ECDSA with SHA-256 or better;
 * - only what that signature covers is read: the entities are taken from the canonical XML
 *   xml-crypto verified (streamed, each entity parsed again on its own: aggregate-entities.ts), so
 *   nothing wrapped around or beside the signed element (signature wrapping) can add an identity
 *   provider;
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

/**
 * The canonical XML of the one element the root's signature covers, once xml-crypto verified it.
 * A function of its own so that the SignedXml instance (which keeps the whole document's DOM through
 * its references) is garbage as soon as it returns.
 */
function signedCanonicalXml(
  xml: string,
  signature: string,
  certificate: X509Certificate,
): { ok: true; canonical: string } | { ok: false; problem: string } {
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
  return { ok: true, canonical: references[0]! };
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
  // A DTD (so any entity) is refused before xml-crypto parses the text; what is then used is read
  // again, strictly, from the verified canonical form.
  if (DECLARATIONS.test(xml)) return fail('the XML has a document type declaration (DTD), which is refused');
  const signature = rootSignature(xml);
  if (!signature || !signature.includes(NS.ds)) return fail('the metadata is not signed');
  const verified = signedCanonicalXml(xml, signature, certificate);
  if (!verified.ok) return verified;
  // The SignedXml instance, the DOM it parsed and its canonical copy are unreachable from here on
  // (signedCanonicalXml returned): only the verified canonical text is kept, and it is streamed.
  let root: MetadataRoot | undefined;
  let read: ReturnType<typeof streamProviders>;
  try {
    read = streamProviders(verified.canonical, input.now, (r) => {
      root = r;
      if (r.uri !== NS.md || !['EntitiesDescriptor', 'EntityDescriptor'].includes(r.local))
        return 'the signed element is not md:EntitiesDescriptor (nor md:EntityDescriptor)';
      const validUntil = r.attributes.validUntil;
      if (!validUntil) return 'the metadata has no validUntil: an aggregate without an end is refused';
      const until = Date.parse(validUntil);
      if (Number.isNaN(until)) return 'the metadata validUntil is not a date';
      if (until <= input.now.getTime()) return `the metadata expired (validUntil ${validUntil.slice(0, 40)})`;
      return undefined;
    });
  } catch (err) {
    return fail((err as Error).message);
  }
  if (!read.ok) return read;
  const { providers, skipped } = read;
  const until = Date.parse(root!.attributes.validUntil!);
  const cache = root!.attributes.cacheDuration;
  const cacheDurationSeconds = cache ? durationSeconds(cache) : undefined;
  const name = root!.attributes.Name;
  return {
    ok: true,
    providers,
    skipped,
    ...(name ? { name: name.slice(0, 200) } : {}),
    validUntil: new Date(until).toISOString(),
    ...(cacheDurationSeconds !== undefined ? { cacheDurationSeconds } : {}),
  };
}
