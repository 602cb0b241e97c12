import { X509Certificate, type KeyObject } from 'node:crypto';
import {
  AltName,
  BasicConstraints,
  Certificate,
  CertificatePolicies,
  ExtKeyUsage,
  NameConstraints,
  RSASSAPSSParams,
  type GeneralSubtree,
} from 'pkijs';
import { BoundedCache } from '../../domain/bounded-cache.ts';

/**
 * One certificate on its own, whatever path it is found on: decoded once (node:crypto and pkijs),
 * its extensions read, and what makes it unusable anywhere: an unrecognised critical extension,
 * a weak key, a weak signature algorithm (../x509.ts validates paths of these).
 */

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

/** Key usage bits as pkijs's BitString holds them (first octet, most significant bit first). */
export const DIGITAL_SIGNATURE = 0x80;
export const KEY_CERT_SIGN = 0x04;

export type Role = 'leaf' | 'intermediate' | 'anchor';

export interface Parsed {
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

/**
 * Parsed certificates by DER. Decoding costs milliseconds (bench/trust.ts), and an issuer's leaf,
 * intermediates and anchors come back with every credential. Parsing and the checks kept with it
 * are a pure function of the bytes, so the memo cannot go stale; it keeps the most recent ones only.
 */
const PARSED_KEPT = 256;
const parsedByDer = new BoundedCache<string, Parsed | undefined>(PARSED_KEPT);
const parsedByPki = new WeakMap<Certificate, Parsed>();

/** The parsed form of a certificate pkijs hands back (from a path it built); undefined for one not parsed here. */
export function parsedOf(pki: Certificate): Parsed | undefined {
  return parsedByPki.get(pki);
}

export function parse(der: Buffer): Parsed | undefined {
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

export function validityProblem(parsed: Parsed, now: Date, role: Role): string | undefined {
  const time = now.getTime();
  if (!(time >= Date.parse(parsed.node.validFrom)))
    return `the ${role} certificate is not valid before ${parsed.node.validFrom}`;
  if (!(time <= Date.parse(parsed.node.validTo))) return `the ${role} certificate expired on ${parsed.node.validTo}`;
  return undefined;
}
