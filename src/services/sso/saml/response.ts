import { decrypt } from 'xml-encryption';
import type { Clock } from '../../../domain/clock.ts';
import type { IdentityProvider, ReleasedAffiliation } from '../../../domain/identity-providers.ts';
import { SAML_ATTRIBUTES } from '../../../domain/identity-providers.ts';
import type { RejectionReason } from '../../../proofs/types.ts';
import { CLOCK_SKEW_MS, samlFor, spEndpoints } from './service-provider.ts';
import type { SamlKeyPair } from './sp-keys.ts';
import { XMLSerializer } from '@xmldom/xmldom';
import { children, descendants, NS, parseXmlStrictly, XmlRefused } from './xml.ts';

/**
 * A SAML response posted to the ACS, checked in three steps. Before any signature is looked at
 * (`readResponse`): size, no DTD, well-formed, one Response whose InResponseTo names an outstanding
 * request, Destination is our ACS, and no SHA-1 anywhere (also inside an encrypted assertion).
 * Then node-saml (`verifyResponse`) checks the signature of the response or the assertion
 * against that IdP's metadata certificates only, decrypts, and checks audience and validity
 * window on the service clock; and on the assertion it verified we check Issuer, a bearer
 * SubjectConfirmation for our ACS and this request, and collect the affiliation attributes.
 */

export type SamlRefusal = { ok: false; reason: RejectionReason; message: string };

/** Signature and digest algorithms accepted: SHA-256 or better (SHA-1 is refused). */
const SIGNATURE_METHODS = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
  'http://www.w3.org/2007/05/xmldsig-more#sha256-rsa-MGF1',
]);
const DIGEST_METHODS = new Set([
  'http://www.w3.org/2001/04/xmlenc#sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512',
]);

const refuse = (reason: RejectionReason, message: string): SamlRefusal => ({ ok: false, reason, message });

/**
 * Why the signature algorithms under `root` are refused, or undefined: every XML signature's
 * SignatureMethod and the DigestMethod of its references (not the digest inside RSA-OAEP key
 * transport of an encrypted assertion, which is no signature).
 */
function algorithmProblem(root: Element): string | undefined {
  for (const signedInfo of descendants(root, NS.ds, 'SignedInfo')) {
    for (const method of children(signedInfo, NS.ds, 'SignatureMethod'))
      if (!SIGNATURE_METHODS.has(method.getAttribute('Algorithm') ?? ''))
        return `the signature algorithm ${(method.getAttribute('Algorithm') ?? '').slice(0, 100)} is not accepted (RSA with SHA-256 or better)`;
    for (const reference of children(signedInfo, NS.ds, 'Reference'))
      for (const method of children(reference, NS.ds, 'DigestMethod'))
        if (!DIGEST_METHODS.has(method.getAttribute('Algorithm') ?? ''))
          return `the digest algorithm ${(method.getAttribute('Algorithm') ?? '').slice(0, 100)} is not accepted (SHA-256 or better)`;
  }
  return undefined;
}

function decryptAsync(xml: string, key: string): Promise<string> {
  return new Promise((resolve, reject) =>
    decrypt(xml, { key, disallowDecryptionWithInsecureAlgorithm: true, warnInsecureAlgorithm: false }, (err, result) =>
      err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result as string),
    ),
  );
}

export interface ReadResponse {
  ok: true;
  xml: string;
  inResponseTo: string;
}

/** The response's own claims, read before any signature is checked: only to find the request. */
export async function readResponse(
  samlResponse: string,
  input: { maxBytes: number; acsUrl: string; keys: SamlKeyPair },
): Promise<ReadResponse | SamlRefusal> {
  if (samlResponse.length > Math.ceil((input.maxBytes * 4) / 3) + 4)
    return refuse('malformed_presentation', `the SAML response is larger than ${input.maxBytes} bytes`);
  if (!/^[A-Za-z0-9+/=\s]+$/.test(samlResponse)) return refuse('malformed_presentation', 'SAMLResponse is not base64');
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
  let root: Element;
  try {
    root = parseXmlStrictly(xml).documentElement;
  } catch (err) {
    if (err instanceof XmlRefused) return refuse('malformed_presentation', err.message);
    throw err;
  }
  if (root.namespaceURI !== NS.samlp || root.localName !== 'Response')
    return refuse('malformed_presentation', 'the message is not a SAML 2.0 Response');
  const inResponseTo = root.getAttribute('InResponseTo') ?? '';
  if (!inResponseTo) return refuse('nonce_mismatch', 'the response answers no request of ours (no InResponseTo)');
  if (root.getAttribute('Destination') !== input.acsUrl)
    return refuse('audience_mismatch', 'the response is not addressed to our assertion consumer service (Destination)');
  const problem = algorithmProblem(root);
  if (problem) return refuse('algorithm_not_allowed', problem);
  const encrypted = children(root, NS.saml, 'EncryptedAssertion');
  for (const element of encrypted) {
    let decrypted: string;
    try {
      decrypted = await decryptAsync(
        new XMLSerializer().serializeToString(element as unknown as Node),
        input.keys.privateKeyPem,
      );
    } catch {
      return refuse('malformed_presentation', 'the encrypted assertion cannot be decrypted with our key');
    }
    let inner: Element;
    try {
      inner = parseXmlStrictly(decrypted).documentElement;
    } catch (err) {
      if (err instanceof XmlRefused)
        return refuse('malformed_presentation', `in the encrypted assertion: ${err.message}`);
      throw err;
    }
    const innerProblem = algorithmProblem(inner);
    if (innerProblem) return refuse('algorithm_not_allowed', innerProblem);
  }
  return { ok: true, xml, inResponseTo };
}

export interface VerifiedAssertion {
  ok: true;
  assertionId: string;
  /** The latest NotOnOrAfter of the assertion: how long its id must stay spent. */
  notOnOrAfter: string;
  affiliation: ReleasedAffiliation;
}

/** A node as node-saml's xml2js parse gives it: attributes in `$`, text in `_`, children in arrays. */
interface XmlJs {
  $?: Record<string, string | undefined>;
  _?: string;
  [child: string]: unknown;
}

const nodes = (value: unknown): XmlJs[] => (Array.isArray(value) ? (value as XmlJs[]) : []);
const first = (value: unknown): XmlJs | undefined => nodes(value)[0];
const textOf = (value: unknown): string => {
  const node: unknown = Array.isArray(value) ? (value as unknown[])[0] : value;
  if (typeof node === 'string') return node;
  const text = (node as XmlJs | undefined)?._;
  return typeof text === 'string' ? text : '';
};

/** Attribute values by any of `names`, from the verified assertion. */
function attributeValues(assertion: XmlJs, names: readonly string[]): string[] {
  const out: string[] = [];
  for (const statement of nodes(assertion.AttributeStatement))
    for (const attribute of nodes(statement.Attribute))
      if (names.includes(attribute.$?.Name ?? '') || names.includes(attribute.$?.FriendlyName ?? ''))
        for (const value of nodes(attribute.AttributeValue)) out.push(textOf(value).trim());
  return out.filter((v) => v !== '' && v.length <= 256);
}

/** The signature, the validity window, the audience (node-saml), then what node-saml leaves to us. */
export async function verifyResponse(
  read: ReadResponse,
  input: { baseUrl: string; keys: SamlKeyPair; idp: IdentityProvider; clock: Clock; requestId: string },
): Promise<VerifiedAssertion | SamlRefusal> {
  const { acsUrl } = spEndpoints(input.baseUrl);
  const saml = samlFor(input);
  let assertion: XmlJs;
  try {
    const { profile } = await saml.validatePostResponseAsync({
      SAMLResponse: Buffer.from(read.xml, 'utf8').toString('base64'),
    });
    const verified = profile?.getAssertion?.() as XmlJs | undefined;
    if (!verified?.Assertion) return refuse('malformed_presentation', 'the response carries no assertion');
    assertion = verified.Assertion as XmlJs;
  } catch (err) {
    return classify(err);
  }
  if (textOf(assertion.Issuer) !== input.idp.entityId)
    return refuse('untrusted_issuer', 'the assertion is issued by another identity provider than the one asked');
  const confirmations = nodes(first(assertion.Subject)?.SubjectConfirmation).filter(
    (c) => c.$?.Method === 'urn:oasis:names:tc:SAML:2.0:cm:bearer',
  );
  const data = (c: XmlJs) => first(c.SubjectConfirmationData)?.$ ?? {};
  if (confirmations.length === 0)
    return refuse('malformed_presentation', 'the assertion has no bearer SubjectConfirmation');
  const forUs = confirmations.filter((c) => data(c).Recipient === acsUrl);
  if (forUs.length === 0)
    return refuse('audience_mismatch', 'the bearer SubjectConfirmation is for another recipient than our ACS');
  const forThisRequest = forUs.filter((c) => data(c).InResponseTo === input.requestId);
  if (forThisRequest.length === 0)
    return refuse('nonce_mismatch', 'the bearer SubjectConfirmation answers another request (InResponseTo)');
  const nowMs = input.clock.now().getTime();
  const confirmed = forThisRequest.find((c) => {
    const { NotBefore, NotOnOrAfter } = data(c);
    return (
      NotOnOrAfter !== undefined &&
      nowMs - CLOCK_SKEW_MS < Date.parse(NotOnOrAfter) &&
      (NotBefore === undefined || nowMs + CLOCK_SKEW_MS >= Date.parse(NotBefore))
    );
  });
  if (!confirmed)
    return refuse('stale_presentation', 'the bearer SubjectConfirmation is not valid now (NotBefore, NotOnOrAfter)');
  const assertionId = assertion.$?.ID ?? '';
  if (!assertionId) return refuse('malformed_presentation', 'the assertion has no ID');
  const subjectEnd = data(confirmed).NotOnOrAfter!;
  const conditionsEnd = first(assertion.Conditions)?.$?.NotOnOrAfter;
  const notOnOrAfter = new Date(
    Math.max(Date.parse(subjectEnd), conditionsEnd ? Date.parse(conditionsEnd) : 0),
  ).toISOString();
  const homeOrganization = attributeValues(assertion, SAML_ATTRIBUTES.homeOrganization)[0];
  return {
    ok: true,
    assertionId,
    notOnOrAfter,
    affiliation: {
      scoped: attributeValues(assertion, SAML_ATTRIBUTES.scopedAffiliation),
      unscoped: attributeValues(assertion, SAML_ATTRIBUTES.affiliation),
      ...(homeOrganization ? { homeOrganization } : {}),
    },
  };
}

/** node-saml throws Errors with sentences; each becomes a stable reason. */
function classify(err: unknown): SamlRefusal {
  const message = err instanceof Error ? err.message : String(err);
  if (/signature/i.test(message)) return refuse('invalid_signature', `the signature does not hold: ${message}`);
  if (/expired|not yet valid|too old/i.test(message)) return refuse('stale_presentation', message);
  if (/audience/i.test(message)) return refuse('audience_mismatch', message);
  if (/status/i.test(message)) return refuse('malformed_presentation', `the identity provider answered: ${message}`);
  return refuse('malformed_presentation', message.slice(0, 300));
}
