import { X509Certificate, type KeyObject } from 'node:crypto';
import {
  AltName,
  BasicConstraints,
  Certificate,
  CertificateChainValidationEngine,
  CertificatePolicies,
  ExtKeyUsage,
  NameConstraints,
  RSASSAPSSParams,
  type FindIssuerCallback,
  type GeneralSubtree,
} from 'pkijs';
import { BoundedCache } from '../domain/bounded-cache.ts';
import { DEFAULT_ALLOWED_EKUS, EXTENDED_KEY_USAGES } from '../domain/credentials.ts';

/**
 * X.509 certificate path validation (RFC 5280 §6), the one validator of every chain the service
 * relies on: a credential's `x5c` (SD-JWT VC), a status list token's `x5c`, and the operator's
 * OpenID4VP request certificate chain (OPENID4VP_CERTIFICATE_CHAIN_FILE, checked at start).
 * Pure: the time is the caller's (the service clock), nothing is fetched.
 *
 * The path is built and validated by pkijs's CertificateChainValidationEngine: signatures (by
 * node:crypto, through the engine's `findIssuer` hook, so that Ed25519 chains verify as well),
 * name chaining, validity at `now`, CA basic constraints and keyCertSign of every issuing
 * certificate, certificate policies, and name constraints of every form. On top of it, each
 * documented where it is done, the checks pkijs 4 does not make (test/proofs/x509-path-validation.test.ts
 * has a case for each):
 *
 * - name constraints, dNSName and URI: pkijs accepts a certificate when one of its names of a form
 *   is permitted, where RFC 5280 §4.2.1.10 requires every one; and it does not apply the trust
 *   anchor's own constraints (handed to it as the initial permitted and excluded sets, and checked
 *   here too) -> {@link nameConstraintProblem};
 * - pathLenConstraint: not enforced by pkijs -> {@link pathLengthProblem};
 * - critical extensions: pkijs refuses only those it cannot decode, and only on CA certificates;
 *   here any critical extension outside {@link UNDERSTOOD_EXTENSIONS}, on any certificate, is
 *   refused, and a critical certificatePolicies may name anyPolicy only -> {@link certificateProblem};
 * - algorithms: SHA-1, MD5 and other weak certificate signatures, and RSA keys below 2048 bits ->
 *   {@link certificateProblem};
 * - the leaf: digitalSignature when it states a key usage, and, for credential signers, an
 *   extended key usage among the allowed ones when it states one (X509_ALLOWED_EKUS) ->
 *   {@link leafProblem}.
 */

/** More certificates than any real issuer chain; bounds the work on hostile input. */
export const MAX_CHAIN_LENGTH = 5;

const OID = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  nameConstraints: '2.5.29.30',
  certificatePolicies: '2.5.29.32',
  policyMappings: '2.5.29.33',
  policyConstraints: '2.5.29.36',
  inhibitAnyPolicy: '2.5.29.54',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  anyPolicy: '2.5.29.32.0',
  rsassaPss: '1.2.840.113549.1.1.10',
} as const;

/**
 * Extensions this validator (pkijs and the checks here) acts on: a certificate may mark these
 * critical. Any other critical extension makes the certificate unusable (RFC 5280 §4.2).
 */
const UNDERSTOOD_EXTENSIONS: ReadonlySet<string> = new Set([
  OID.basicConstraints,
  OID.keyUsage,
  OID.extKeyUsage,
  OID.subjectAltName,
  OID.nameConstraints,
  OID.certificatePolicies,
  OID.policyMappings,
  OID.policyConstraints,
  OID.inhibitAnyPolicy,
  OID.subjectKeyIdentifier,
  OID.authorityKeyIdentifier,
]);

/** Certificate signature algorithms accepted (SHA-2 or EdDSA); RSASSA-PSS only with a SHA-2 hash. */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, string>> = {
  '1.2.840.113549.1.1.11': 'sha256WithRSAEncryption',
  '1.2.840.113549.1.1.12': 'sha384WithRSAEncryption',
  '1.2.840.113549.1.1.13': 'sha512WithRSAEncryption',
  [OID.rsassaPss]: 'RSASSA-PSS',
  '1.2.840.10045.4.3.2': 'ecdsa-with-SHA256',
  '1.2.840.10045.4.3.3': 'ecdsa-with-SHA384',
  '1.2.840.10045.4.3.4': 'ecdsa-with-SHA512',
  '1.3.101.112': 'Ed25519',
  '1.3.101.113': 'Ed448',
};

/** Names of refused signature algorithms, for the message. */
const WEAK_SIGNATURE_ALGORITHMS: Readonly<Record<string, string>> = {
  '1.2.840.113549.1.1.2': 'md2WithRSAEncryption',
  '1.2.840.113549.1.1.4': 'md5WithRSAEncryption',
  '1.2.840.113549.1.1.5': 'sha1WithRSAEncryption',
  '1.2.840.10045.4.1': 'ecdsa-with-SHA1',
  '1.2.840.10040.4.3': 'dsa-with-SHA1',
};

const SHA2_HASHES: ReadonlySet<string> = new Set([
  '2.16.840.1.101.3.4.2.1',
  '2.16.840.1.101.3.4.2.2',
  '2.16.840.1.101.3.4.2.3',
]);

const MIN_RSA_BITS = 2048;
const EC_CURVES: ReadonlySet<string> = new Set(['prime256v1', 'secp384r1', 'secp521r1']);

/** Issuer look-ups one validation may make; a hostile chain of cross-signed certificates cannot loop. */
const MAX_ISSUER_LOOKUPS = 32;

/** Key usage bits as pkijs's BitString holds them (first octet, most significant bit first). */
const DIGITAL_SIGNATURE = 0x80;
const KEY_CERT_SIGN = 0x04;

type Role = 'leaf' | 'intermediate' | 'anchor';

interface Parsed {
  der: Buffer;
  pki: Certificate;
  node: X509Certificate;
  publicKey: KeyObject;
  /** Why the certificate is unusable whatever the path (extensions, key), or undefined. */
  problem?: string;
  /** Why its signature algorithm is refused, or undefined. */
  signatureProblem?: string;
  basicConstraints?: { ca: boolean; pathLength?: number };
  /** First octet of key usage, when stated. */
  keyUsage?: number;
  extKeyUsage?: readonly string[];
  dnsNames: string[];
  uris: string[];
  nameConstraints?: { permitted: GeneralSubtree[]; excluded: GeneralSubtree[] };
  selfIssued: boolean;
}

export type ChainCheck = { ok: true; leaf: X509Certificate } | { ok: false; message: string };

/** `noPath`: no path to the anchor could be built (another anchor may do); otherwise a rule was broken. */
export type PathCheck = { ok: true } | { ok: false; noPath: boolean; message: string };

/**
 * Parsed certificates by DER. Decoding costs milliseconds (bench/trust.ts), and an issuer's leaf,
 * intermediates and anchors come back with every credential. Parsing and the checks kept with it
 * are a pure function of the bytes, so the memo cannot go stale; it keeps the most recent ones only.
 */
const PARSED_KEPT = 256;
const parsedByDer = new BoundedCache<string, Parsed | undefined>(PARSED_KEPT);
const parsedByPki = new WeakMap<Certificate, Parsed>();

function parse(der: Buffer): Parsed | undefined {
  const memoKey = der.toString('base64');
  if (parsedByDer.has(memoKey)) return parsedByDer.get(memoKey);
  const parsed = parseUncached(der);
  parsedByDer.set(memoKey, parsed);
  if (parsed) parsedByPki.set(parsed.pki, parsed);
  return parsed;
}

function parseUncached(der: Buffer): Parsed | undefined {
  let parsed: Parsed;
  try {
    const node = new X509Certificate(der);
    const pki = Certificate.fromBER(new Uint8Array(der));
    parsed = {
      der,
      pki,
      node,
      publicKey: node.publicKey,
      dnsNames: [],
      uris: [],
      selfIssued: pki.subject.isEqual(pki.issuer),
    };
  } catch {
    return undefined;
  }
  try {
    parsed.problem = extensionsProblem(parsed) ?? keyProblem(parsed.publicKey);
  } catch {
    parsed.problem = 'its extensions cannot be decoded';
  }
  parsed.signatureProblem = signatureAlgorithmProblem(parsed.pki);
  return parsed;
}

/** Reads the extensions into `parsed`; says why they make the certificate unusable, if they do. */
function extensionsProblem(parsed: Parsed): string | undefined {
  const seen = new Set<string>();
  for (const extension of parsed.pki.extensions ?? []) {
    const id = extension.extnID;
    if (seen.has(id)) return `it has the extension ${id} twice`;
    seen.add(id);
    const value = extension.parsedValue as unknown;
    if (value === undefined || (typeof value === 'object' && value !== null && 'parsingError' in value))
      return `its extension ${id} cannot be decoded`;
    if (extension.critical && !UNDERSTOOD_EXTENSIONS.has(id)) return `it has an unrecognised critical extension ${id}`;
    if (id === OID.basicConstraints && value instanceof BasicConstraints) {
      const pathLength = value.pathLenConstraint;
      parsed.basicConstraints = {
        ca: value.cA === true,
        // A path length too large for a JavaScript number (an asn1js Integer) limits nothing.
        ...(typeof pathLength === 'number' ? { pathLength } : {}),
      };
    } else if (id === OID.keyUsage) {
      // pkijs leaves key usage as the asn1js BIT STRING it is.
      const bits = (value as { valueBlock?: { valueHexView?: unknown } }).valueBlock?.valueHexView;
      if (!(bits instanceof Uint8Array)) return 'its key usage cannot be decoded';
      parsed.keyUsage = bits[0] ?? 0;
    } else if (id === OID.extKeyUsage && value instanceof ExtKeyUsage) {
      parsed.extKeyUsage = value.keyPurposes;
    } else if (id === OID.subjectAltName && value instanceof AltName) {
      for (const name of value.altNames) {
        if (name.type === 2) parsed.dnsNames.push(String(name.value));
        if (name.type === 6) parsed.uris.push(String(name.value));
      }
    } else if (id === OID.nameConstraints && value instanceof NameConstraints) {
      parsed.nameConstraints = { permitted: value.permittedSubtrees ?? [], excluded: value.excludedSubtrees ?? [] };
    } else if (id === OID.certificatePolicies && value instanceof CertificatePolicies && extension.critical) {
      // A critical policy extension binds its user to understand every policy it names; this
      // service has none of its own, so only anyPolicy can be accepted.
      const unknown = value.certificatePolicies.map((p) => p.policyIdentifier).filter((p) => p !== OID.anyPolicy);
      if (unknown.length > 0)
        return `its critical certificatePolicies names a policy not understood here (${unknown[0]})`;
    }
  }
  return undefined;
}

/** RSA of at least 2048 bits, ECDSA on P-256/384/521, Ed25519 or Ed448. */
function keyProblem(key: KeyObject): string | undefined {
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (type === 'rsa' || type === 'rsa-pss')
    return (details.modulusLength ?? 0) < MIN_RSA_BITS
      ? `its RSA key has ${details.modulusLength} bits, fewer than ${MIN_RSA_BITS}`
      : undefined;
  if (type === 'ec')
    return EC_CURVES.has(details.namedCurve ?? '') ? undefined : `its key is on the curve ${details.namedCurve}`;
  if (type === 'ed25519' || type === 'ed448') return undefined;
  return `its key type ${type} is not accepted`;
}

function signatureAlgorithmProblem(pki: Certificate): string | undefined {
  const algorithmId = pki.signatureAlgorithm.algorithmId;
  const algorithmParams: unknown = pki.signatureAlgorithm.algorithmParams;
  const weak = WEAK_SIGNATURE_ALGORITHMS[algorithmId];
  if (weak) return `it is signed with ${weak}, which is not accepted`;
  if (SIGNATURE_ALGORITHMS[algorithmId] === undefined)
    return `it is signed with an algorithm not accepted here (${algorithmId})`;
  if (algorithmId === OID.rsassaPss) {
    let hash: string;
    try {
      // Absent parameters mean SHA-1 (RFC 4055).
      hash = new RSASSAPSSParams(algorithmParams ? { schema: algorithmParams } : {}).hashAlgorithm.algorithmId;
    } catch {
      return 'its RSASSA-PSS parameters cannot be decoded';
    }
    if (!SHA2_HASHES.has(hash)) return `it is signed with RSASSA-PSS over a hash not accepted here (${hash})`;
  }
  return undefined;
}

/** Parses a PEM certificate (a registry anchor); undefined when it is not exactly one certificate. */
export function parsePemCertificate(pem: string): X509Certificate | undefined {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks || blocks.length !== 1) return undefined;
  try {
    return new X509Certificate(blocks[0]!);
  } catch {
    return undefined;
  }
}

/**
 * Why `pem` cannot be a trust anchor, or undefined: one parsable certificate of a CA (basic
 * constraints cA), allowed to sign certificates when it states its key usage, whose extensions and
 * key the validator accepts.
 */
export function anchorProblem(pem: unknown): string | undefined {
  if (typeof pem !== 'string') return 'a PEM certificate is required';
  const cert = parsePemCertificate(pem);
  if (!cert) return 'not exactly one PEM certificate (-----BEGIN CERTIFICATE-----)';
  const parsed = parse(cert.raw);
  if (!parsed) return 'the certificate cannot be decoded';
  if (parsed.problem) return `the certificate is refused: ${parsed.problem}`;
  if (parsed.basicConstraints?.ca !== true) return 'the certificate is not a CA (basic constraints cA is not set)';
  if (parsed.keyUsage !== undefined && (parsed.keyUsage & KEY_CERT_SIGN) === 0)
    return 'the certificate may not sign certificates (key usage lacks keyCertSign)';
  return undefined;
}

/** What the path's leaf may be used for. */
export interface LeafPurpose {
  /**
   * Extended key usages (OIDs) of which a leaf that states the extension must have one; undefined
   * when the extension is not judged (the operator's request certificate, whose purpose wallets judge).
   */
  allowedEkus?: readonly string[];
}

/** The leaf signs JWTs: digitalSignature when it states a key usage, an allowed EKU when it states one. */
function leafProblem(leaf: Parsed, purpose: LeafPurpose): string | undefined {
  if (leaf.keyUsage !== undefined && (leaf.keyUsage & DIGITAL_SIGNATURE) === 0)
    return "the leaf certificate's key usage does not allow digital signatures";
  const allowed = purpose.allowedEkus;
  if (allowed === undefined || leaf.extKeyUsage === undefined) return undefined;
  if (leaf.extKeyUsage.some((eku) => allowed.includes(eku))) return undefined;
  const named = leaf.extKeyUsage.map(ekuName).join(', ');
  return `the leaf certificate's extended key usage (${named}) does not allow signing credentials (X509_ALLOWED_EKUS: ${allowed.map(ekuName).join(', ') || 'none'})`;
}

function ekuName(oid: string): string {
  return Object.entries(EXTENDED_KEY_USAGES).find(([, value]) => value === oid)?.[0] ?? oid;
}

function validityProblem(parsed: Parsed, now: Date, role: Role): string | undefined {
  const time = now.getTime();
  if (!(time >= Date.parse(parsed.node.validFrom)))
    return `the ${role} certificate is not valid before ${parsed.node.validFrom}`;
  if (!(time <= Date.parse(parsed.node.validTo))) return `the ${role} certificate expired on ${parsed.node.validTo}`;
  return undefined;
}

/** RFC 5280 §4.2.1.10 dNSName: the name is the constraint or ends with `.constraint`; a leading dot means below it only. */
function dnsWithin(name: string, constraint: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, '');
  const c = constraint.toLowerCase().replace(/\.$/, '');
  if (c === '') return true;
  if (c.startsWith('.')) return n.endsWith(c);
  return n === c || n.endsWith(`.${c}`);
}

/** URI: the constraint applies to the host; `.example.edu` means any host below it, `example.edu` that host only. */
function uriWithin(uri: string, constraint: string): boolean {
  let host: string;
  try {
    host = new URL(uri).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (host === '') return false;
  const c = constraint.toLowerCase();
  return c.startsWith('.') ? host.endsWith(c) : host === c;
}

function subtreesOf(subtrees: readonly GeneralSubtree[], type: 2 | 6): string[] {
  return subtrees.flatMap((subtree) => (subtree.base.type === type ? [String(subtree.base.value)] : []));
}

/**
 * dNSName and URI name constraints, every level down to the anchor's own: each name of a form must
 * lie within the permitted subtrees of that form of every CA above it, and in none of their
 * excluded ones. Self-issued intermediates are exempt, as in RFC 5280 §6.1.3 (b).
 */
function nameConstraintProblem(path: readonly Parsed[], roles: readonly Role[]): string | undefined {
  for (let i = 0; i < path.length - 1; i++) {
    const subject = path[i]!;
    if (i > 0 && subject.selfIssued) continue;
    const names: Array<{ type: 2 | 6; value: string; within: (name: string, constraint: string) => boolean }> = [
      ...subject.dnsNames.map((value) => ({ type: 2 as const, value, within: dnsWithin })),
      ...subject.uris.map((value) => ({ type: 6 as const, value, within: uriWithin })),
    ];
    for (let j = i + 1; j < path.length; j++) {
      const constraints = path[j]!.nameConstraints;
      if (!constraints) continue;
      for (const name of names) {
        const permitted = subtreesOf(constraints.permitted, name.type);
        if (permitted.length > 0 && !permitted.some((c) => name.within(name.value, c)))
          return `the ${roles[i]} certificate's name ${name.value} is outside the names the ${roles[j]} certificate permits (${permitted.join(', ')})`;
        const excluded = subtreesOf(constraints.excluded, name.type).find((c) => name.within(name.value, c));
        if (excluded !== undefined)
          return `the ${roles[i]} certificate's name ${name.value} is excluded by the ${roles[j]} certificate (${excluded})`;
      }
    }
  }
  return undefined;
}

/** pathLenConstraint (RFC 5280 §4.2.1.9): non-self-issued intermediate CAs below each CA, not counting the leaf. */
function pathLengthProblem(path: readonly Parsed[], roles: readonly Role[]): string | undefined {
  for (let j = 1; j < path.length; j++) {
    const pathLength = path[j]!.basicConstraints?.pathLength;
    if (pathLength === undefined) continue;
    const below = path.slice(1, j).filter((cert) => !cert.selfIssued).length;
    if (below > pathLength)
      return `the ${roles[j]} certificate allows ${pathLength} intermediate CA(s) below it, the chain has ${below}`;
  }
  return undefined;
}

/** pkijs's `findIssuer`, with signatures checked by node:crypto (Ed25519 too), and a bound on look-ups. */
function nodeFindIssuer(): FindIssuerCallback {
  let lookups = 0;
  return async (certificate, engine) => {
    if (++lookups > MAX_ISSUER_LOOKUPS) return [];
    const subject = parsedByPki.get(certificate);
    if (!subject) return [];
    return [...engine.trustedCerts, ...engine.certs].filter((candidate) => {
      const issuer = parsedByPki.get(candidate);
      if (!issuer || !certificate.issuer.isEqual(candidate.subject)) return false;
      try {
        return subject.node.verify(issuer.publicKey);
      } catch {
        return false;
      }
    });
  };
}

/** What a failed pkijs verification means, in the service's words. */
function engineProblem(
  result: { resultCode?: number; resultMessage?: string },
  certs: readonly Parsed[],
  roles: readonly Role[],
  now: Date,
): { noPath: boolean; message: string } {
  switch (result.resultCode) {
    case 8:
      for (const [i, cert] of certs.entries()) {
        const invalid = validityProblem(cert, now, roles[i]!);
        if (invalid) return { noPath: false, message: invalid };
      }
      return { noPath: false, message: 'a certificate of the chain is not valid at this time' };
    case 3:
    case 4:
      return { noPath: false, message: "an issuing certificate's key usage does not allow signing certificates" };
    case 7:
    case 14:
      return { noPath: false, message: 'a certificate that issues another in the chain is not a CA' };
    case 41:
    case 42:
      // Said precisely when the chain, as sent, is the path (it is, in the order x5c requires).
      return {
        noPath: false,
        message:
          nameConstraintProblem(certs, roles) ??
          `a certificate of the chain breaks a name constraint (${result.resultMessage})`,
      };
    case 9:
    case 60:
    case 97:
    case -1:
      return { noPath: true, message: 'the chain does not lead to the trust anchor' };
    default:
      return { noPath: false, message: `the chain is not valid: ${result.resultMessage ?? 'unknown reason'}` };
  }
}

function rolesOf(path: readonly Parsed[]): Role[] {
  return path.map((_, i) => (i === 0 ? 'leaf' : i === path.length - 1 ? 'anchor' : 'intermediate'));
}

/**
 * The validator: `chain` (DER, leaf first, then the certificates that may lead from it to the
 * anchor) validates to `anchor` at `now`, for `purpose`. Every supplied certificate must be
 * acceptable on its own (extensions, key, signature algorithm); the anchor's own signature is not
 * used, so its algorithm is not judged. A rejection is a value, never a throw.
 */
export async function validatePath(
  chain: readonly Uint8Array[],
  anchor: Uint8Array,
  now: Date,
  purpose: LeafPurpose = {},
): Promise<PathCheck> {
  const anchorParsed = parse(Buffer.from(anchor));
  if (!anchorParsed) return { ok: false, noPath: false, message: 'the trust anchor cannot be decoded' };
  // The anchor may be sent along (as x5c's last element); the configured copy is the one that counts.
  const supplied: Parsed[] = [];
  for (const der of chain) {
    const parsed = parse(Buffer.from(der));
    if (!parsed) return { ok: false, noPath: false, message: 'a certificate of the chain cannot be decoded' };
    if (supplied.length > 0 && parsed.der.equals(anchorParsed.der)) continue;
    supplied.push(parsed);
  }
  const leaf = supplied[0];
  if (!leaf) return { ok: false, noPath: false, message: 'the chain holds no certificate' };
  const suppliedRoles: Role[] = supplied.map((_, i) => (i === 0 ? 'leaf' : 'intermediate'));
  for (const [i, cert] of supplied.entries()) {
    const problem = cert.problem ?? cert.signatureProblem;
    if (problem)
      return { ok: false, noPath: false, message: `the ${suppliedRoles[i]} certificate is refused: ${problem}` };
  }
  if (anchorParsed.problem)
    return { ok: false, noPath: false, message: `the anchor certificate is refused: ${anchorParsed.problem}` };
  const leafRefused = leafProblem(leaf, purpose);
  if (leafRefused) return { ok: false, noPath: false, message: leafRefused };

  const engine = new CertificateChainValidationEngine({
    trustedCerts: [anchorParsed.pki],
    // pkijs takes the last certificate as the one to validate.
    certs: [...supplied.slice(1).map((cert) => cert.pki), leaf.pki],
    checkDate: now,
    findIssuer: nodeFindIssuer(),
  });
  const result = await engine.verify({
    // The anchor's own name constraints, which pkijs would otherwise not apply (RFC 5280 leaves
    // trust anchor constraints to the application; a federation root's are meant to hold).
    initialPermittedSubtreesSet: anchorParsed.nameConstraints?.permitted ?? [],
    initialExcludedSubtreesSet: anchorParsed.nameConstraints?.excluded ?? [],
  });
  if (!result.result)
    return { ok: false, ...engineProblem(result, [...supplied, anchorParsed], [...suppliedRoles, 'anchor'], now) };
  const path = (result.certificatePath ?? []).map((cert) => parsedByPki.get(cert));
  if (path.length < 2 || path.some((cert) => cert === undefined) || path.at(-1) !== anchorParsed)
    return { ok: false, noPath: true, message: 'the chain does not lead to the trust anchor' };
  const known = path as Parsed[];
  const roles = rolesOf(known);
  const problem = pathLengthProblem(known, roles) ?? nameConstraintProblem(known, roles);
  return problem ? { ok: false, noPath: false, message: problem } : { ok: true };
}

/**
 * The operator's request certificate chain (PEM order, leaf first), checked at start: the chain
 * validates to its own last certificate, at `now`. A lone certificate is checked by itself
 * (extensions, key, algorithm, validity, key usage): there is nothing to chain it to.
 */
export async function validateOwnChain(chain: readonly Uint8Array[], now: Date): Promise<PathCheck> {
  if (chain.length >= 2) return validatePath(chain.slice(0, -1), chain.at(-1)!, now);
  const leaf = chain[0] && parse(Buffer.from(chain[0]));
  if (!leaf) return { ok: false, noPath: false, message: 'the certificate cannot be decoded' };
  const refused = leaf.problem ?? leaf.signatureProblem;
  const problem = refused
    ? `the leaf certificate is refused: ${refused}`
    : (validityProblem(leaf, now, 'leaf') ?? leafProblem(leaf, {}));
  return problem ? { ok: false, noPath: false, message: problem } : { ok: true };
}

/** Whether the leaf names the issuer: a SAN URI equal to `iss`, or a SAN DNS name equal to its host. */
function namesIssuer(leaf: Parsed, iss: string): boolean {
  if (leaf.uris.includes(iss)) return true;
  try {
    const url = new URL(iss);
    return url.protocol === 'https:' && leaf.dnsNames.some((name) => name.toLowerCase() === url.hostname.toLowerCase());
  } catch {
    return false;
  }
}

/**
 * Validates a JOSE `x5c` (base64 DER, leaf first; the anchor itself may end it) to one of
 * `anchors` (PEM) at `now` by {@link validatePath}, for a leaf that names `iss` in its subject
 * alternative names and may sign credentials (`allowedEkus`, DEFAULT_ALLOWED_EKUS when absent).
 */
export async function validateChain(
  x5c: unknown,
  anchors: readonly string[],
  iss: string,
  now: Date,
  allowedEkus: readonly string[] = DEFAULT_ALLOWED_EKUS,
): Promise<ChainCheck> {
  if (!Array.isArray(x5c) || x5c.length === 0 || x5c.length > MAX_CHAIN_LENGTH)
    return { ok: false, message: `x5c must be an array of 1 to ${MAX_CHAIN_LENGTH} certificates` };
  const chain: Parsed[] = [];
  for (const entry of x5c) {
    const der = typeof entry === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(entry) ? Buffer.from(entry, 'base64') : null;
    const parsed = der && parse(der);
    if (!parsed) return { ok: false, message: 'an x5c entry is not a base64 DER certificate' };
    chain.push(parsed);
  }
  const leaf = chain[0]!;
  if (!namesIssuer(leaf, iss))
    return { ok: false, message: `the x5c leaf certificate does not name ${iss} (SAN DNS or URI)` };
  let problem: string | undefined;
  for (const pem of anchors) {
    const anchor = parsePemCertificate(pem);
    if (!anchor) continue;
    const check = await validatePath(
      chain.map((cert) => cert.der),
      anchor.raw,
      now,
      { allowedEkus },
    );
    if (check.ok) return { ok: true, leaf: leaf.node };
    // A rule broken on the way to one anchor says more than another anchor's missing path.
    if (!check.noPath) problem ??= check.message;
  }
  return { ok: false, message: problem ?? 'the x5c chain does not lead to a trust anchor of this issuer' };
}
