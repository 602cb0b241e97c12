import { X509Certificate } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import {
  BasicConstraints,
  Certificate,
  id_ce_basicConstraints,
  id_ce_keyUsage,
  id_ce_subjectAltName,
  KeyUsage,
  KeyUsageFlags,
  SubjectAlternativeName,
} from '@peculiar/asn1-x509';

/**
 * X.509 trust for `sd-jwt-vc` issuers: an `x5c` chain (leaf first) must validate to one of the
 * registry entry's anchors, at the service's clock. Signatures, validity and the issuer/subject
 * link come from node:crypto's X509Certificate; the extensions it does not expose (key usage bits,
 * basic constraints' path length, SAN URIs) are decoded with @peculiar/asn1-x509. Pure.
 */

/** More certificates than any real issuer chain; bounds the work on hostile input. */
export const MAX_CHAIN_LENGTH = 5;

interface ParsedCertificate {
  cert: X509Certificate;
  keyUsage?: number;
  basicConstraints?: { ca: boolean; pathLength?: number };
  sanDns: string[];
  sanUris: string[];
}

export type ChainCheck = { ok: true; leaf: X509Certificate } | { ok: false; message: string };

/**
 * Parsed certificates by DER. Decoding the extensions costs milliseconds (bench/trust.ts), and an
 * issuer's leaf, intermediates and anchors come back with every credential. Parsing is a pure
 * function of the bytes, so the memo cannot go stale; it keeps the most recent ones only.
 */
const parsedByDer = new Map<string, ParsedCertificate | undefined>();
const PARSED_KEPT = 256;

function parse(der: Buffer): ParsedCertificate | undefined {
  const memoKey = der.toString('base64');
  if (parsedByDer.has(memoKey)) return parsedByDer.get(memoKey);
  const parsed = parseUncached(der);
  if (parsedByDer.size >= PARSED_KEPT) parsedByDer.delete(parsedByDer.keys().next().value!);
  parsedByDer.set(memoKey, parsed);
  return parsed;
}

function parseUncached(der: Buffer): ParsedCertificate | undefined {
  let cert: X509Certificate;
  let asn: Certificate;
  try {
    cert = new X509Certificate(der);
    asn = AsnConvert.parse(der, Certificate);
  } catch {
    return undefined;
  }
  const parsed: ParsedCertificate = { cert, sanDns: [], sanUris: [] };
  for (const extension of asn.tbsCertificate.extensions ?? []) {
    const value = extension.extnValue.buffer;
    try {
      if (extension.extnID === id_ce_keyUsage) parsed.keyUsage = AsnConvert.parse(value, KeyUsage).toNumber();
      if (extension.extnID === id_ce_basicConstraints) {
        const bc = AsnConvert.parse(value, BasicConstraints);
        parsed.basicConstraints = { ca: bc.cA, pathLength: bc.pathLenConstraint };
      }
      if (extension.extnID === id_ce_subjectAltName) {
        for (const name of AsnConvert.parse(value, SubjectAlternativeName)) {
          if (name.dNSName !== undefined) parsed.sanDns.push(name.dNSName.toLowerCase());
          if (name.uniformResourceIdentifier !== undefined) parsed.sanUris.push(name.uniformResourceIdentifier);
        }
      }
    } catch {
      return undefined;
    }
  }
  return parsed;
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
 * constraints cA), allowed to sign certificates when it states its key usage.
 */
export function anchorProblem(pem: unknown): string | undefined {
  if (typeof pem !== 'string') return 'a PEM certificate is required';
  const cert = parsePemCertificate(pem);
  if (!cert) return 'not exactly one PEM certificate (-----BEGIN CERTIFICATE-----)';
  const parsed = parse(cert.raw)!;
  if (parsed.basicConstraints?.ca !== true) return 'the certificate is not a CA (basic constraints cA is not set)';
  if (parsed.keyUsage !== undefined && (parsed.keyUsage & KeyUsageFlags.keyCertSign) === 0)
    return 'the certificate may not sign certificates (key usage lacks keyCertSign)';
  return undefined;
}

function validAt(parsed: ParsedCertificate, now: Date, role: string): string | undefined {
  const from = Date.parse(parsed.cert.validFrom);
  const to = Date.parse(parsed.cert.validTo);
  if (!(now.getTime() >= from)) return `the ${role} certificate is not valid before ${parsed.cert.validFrom}`;
  if (!(now.getTime() <= to)) return `the ${role} certificate expired on ${parsed.cert.validTo}`;
  return undefined;
}

/** A certificate that signs others: a CA by basic constraints, with keyCertSign, within its path length. */
function issuingProblem(parsed: ParsedCertificate, below: number, role: string): string | undefined {
  if (parsed.basicConstraints?.ca !== true) return `the ${role} certificate is not a CA`;
  if (parsed.keyUsage !== undefined && (parsed.keyUsage & KeyUsageFlags.keyCertSign) === 0)
    return `the ${role} certificate's key usage does not allow signing certificates`;
  const pathLength = parsed.basicConstraints.pathLength;
  if (pathLength !== undefined && below > pathLength)
    return `the ${role} certificate allows ${pathLength} intermediate CA(s) below it, the chain has ${below}`;
  return undefined;
}

/** Whether the leaf names the issuer: a SAN URI equal to `iss`, or a SAN DNS name equal to its host. */
function namesIssuer(leaf: ParsedCertificate, iss: string): boolean {
  if (leaf.sanUris.includes(iss)) return true;
  try {
    const url = new URL(iss);
    return url.protocol === 'https:' && leaf.sanDns.includes(url.hostname.toLowerCase());
  } catch {
    return false;
  }
}

/**
 * Validates `x5c` (base64 DER, leaf first; the anchor itself may end it) to one of `anchors` (PEM)
 * at `now`: every signature, every validity period, CA basic constraints, key usage and path
 * length of every issuing certificate, a leaf allowed to sign (digitalSignature when it states its
 * key usage) that names `iss` in its subject alternative names.
 */
export function validateChain(x5c: unknown, anchors: readonly string[], iss: string, now: Date): ChainCheck {
  if (!Array.isArray(x5c) || x5c.length === 0 || x5c.length > MAX_CHAIN_LENGTH)
    return { ok: false, message: `x5c must be an array of 1 to ${MAX_CHAIN_LENGTH} certificates` };
  const chain: ParsedCertificate[] = [];
  for (const entry of x5c) {
    const der = typeof entry === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(entry) ? Buffer.from(entry, 'base64') : null;
    const parsed = der && parse(der);
    if (!parsed) return { ok: false, message: 'an x5c entry is not a base64 DER certificate' };
    chain.push(parsed);
  }
  const leaf = chain[0]!;
  if (!namesIssuer(leaf, iss))
    return { ok: false, message: `the x5c leaf certificate does not name ${iss} (SAN DNS or URI)` };
  if (leaf.keyUsage !== undefined && (leaf.keyUsage & KeyUsageFlags.digitalSignature) === 0)
    return { ok: false, message: "the x5c leaf certificate's key usage does not allow digital signatures" };
  let lastProblem = 'the x5c chain does not lead to a trust anchor of this issuer';
  for (const pem of anchors) {
    const anchorCert = parsePemCertificate(pem);
    const anchor = anchorCert && parse(anchorCert.raw);
    if (!anchor) continue;
    // The anchor may be sent as the last element; it is then the registry's copy that counts.
    const path = chain.at(-1)!.cert.raw.equals(anchor.cert.raw) && chain.length > 1 ? chain.slice(0, -1) : chain;
    const problem = pathProblem([...path, anchor], now);
    if (!problem) return { ok: true, leaf: leaf.cert };
    lastProblem = problem;
  }
  return { ok: false, message: lastProblem };
}

/** Checks `path` (leaf … intermediates, anchor last) link by link; undefined when it holds. */
function pathProblem(path: ParsedCertificate[], now: Date): string | undefined {
  for (let i = 0; i < path.length; i++) {
    const role = i === 0 ? 'leaf' : i === path.length - 1 ? 'anchor' : 'intermediate';
    const expired = validAt(path[i]!, now, role);
    if (expired) return expired;
    if (i === 0) continue;
    const issuer = path[i]!;
    const subject = path[i - 1]!;
    // Intermediate CAs below this issuer, not counting the leaf (RFC 5280 §4.2.1.9).
    const issuing = issuingProblem(issuer, i - 1, role);
    if (issuing) return issuing;
    if (!subject.cert.checkIssued(issuer.cert) || !subject.cert.verify(issuer.cert.publicKey))
      return i === path.length - 1
        ? 'the x5c chain does not lead to a trust anchor of this issuer'
        : `the ${i === 1 ? 'leaf' : 'intermediate'} certificate is not signed by the next one in x5c`;
  }
  return undefined;
}
