import type { X509Certificate } from 'node:crypto';
import { CertificateChainValidationEngine } from 'pkijs';
import { DEFAULT_ALLOWED_EKUS, EXTENDED_KEY_USAGES } from '../domain/credentials.ts';
import {
  DIGITAL_SIGNATURE,
  KEY_CERT_SIGN,
  parse,
  parsedOf,
  parsePemCertificate,
  validityProblem,
  type Parsed,
  type Role,
} from './x509/certificate.ts';
import { engineProblem, nodeFindIssuer } from './x509/engine.ts';
import { nameConstraintProblem, pathLengthProblem } from './x509/path-constraints.ts';

export { parsePemCertificate } from './x509/certificate.ts';

/**
 * X.509 certificate path validation (RFC 5280 §6), the one validator of every chain the service
 * relies on: a credential's `x5c` (SD-JWT VC), a status list token's `x5c`, and the operator's
 * OpenID4VP request certificate chain (OPENID4VP_CERTIFICATE_CHAIN_FILE, checked at start).
 * Pure: the time is the caller's (the service clock), nothing is fetched. This file is the
 * validator's entry; x509/ holds its parts: certificate.ts (one certificate, parsed once, and what
 * makes it unusable anywhere), engine.ts (pkijs's engine: the issuer look-up, its failure codes)
 * and path-constraints.ts (the name and path length constraints pkijs does not enforce).
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
 *   here any critical extension outside UNDERSTOOD_EXTENSIONS, on any certificate, is refused,
 *   and a critical certificatePolicies may name anyPolicy only -> x509/certificate.ts;
 * - algorithms: SHA-1, MD5 and other weak certificate signatures, and RSA keys below 2048 bits ->
 *   x509/certificate.ts;
 * - the leaf: digitalSignature when it states a key usage, and, for credential signers, an
 *   extended key usage among the allowed ones when it states one (X509_ALLOWED_EKUS) ->
 *   {@link leafProblem}.
 */

/** More certificates than any real issuer chain; bounds the work on hostile input. */
export const MAX_CHAIN_LENGTH = 5;

export type ChainCheck = { ok: true; leaf: X509Certificate } | { ok: false; message: string };

/** `noPath`: no path to the anchor could be built (another anchor may do); otherwise a rule was broken. */
export type PathCheck = { ok: true } | { ok: false; noPath: boolean; message: string };

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
  const path = (result.certificatePath ?? []).map((cert) => parsedOf(cert));
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
