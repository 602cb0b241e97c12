import type { Environment } from './environment.ts';

/**
 * The credential formats a presentation can come in (docs/universities.md). `jwt-vc`: a W3C
 * Verifiable Credential secured as JWT (`jwt_vc_json`), in a VP JWT (docs/credential-profiles.md).
 */
export const CREDENTIAL_FORMATS = ['sd-jwt-vc', 'jwt-vc', 'bbs', 'groth16'] as const;
export type CredentialFormat = (typeof CREDENTIAL_FORMATS)[number];

/** Public key material of one issuer, one entry per format it issues in. */
export interface IssuerKeys {
  /** Public JWK (ES256 on P-256, or EdDSA on Ed25519) for `sd-jwt-vc` and `jwt-vc`. */
  sdJwtVc?: JsonWebKey;
  /** BLS12-381 G2 public key (96 bytes), base64url, for `bbs`. */
  bbs?: string;
  /** BabyJubJub public key point, decimal strings, for `groth16`. */
  babyJubJub?: { x: string; y: string };
}

/** Which {@link IssuerKeys} entry verifies each format. */
export const KEY_OF_FORMAT: Readonly<Record<CredentialFormat, keyof IssuerKeys>> = {
  'sd-jwt-vc': 'sdJwtVc',
  'jwt-vc': 'sdJwtVc',
  bbs: 'bbs',
  groth16: 'babyJubJub',
};

/** An entry of the trust registry: a university and its keys. */
export interface TrustedIssuer {
  id: string;
  name: string;
  domain: string;
  /** ISO 3166-1 alpha-2. */
  country: string;
  /** Sandbox issuers are trusted only for sandbox sessions, live ones only for live sessions. */
  environment: Environment;
  /** Raw public keys; may be empty when the entry trusts through anchors or metadata. */
  keys: IssuerKeys;
  /**
   * X.509 trust anchors (PEM certificates), for `sd-jwt-vc`: a credential whose `x5c` chain
   * validates to one of them, with a leaf naming `iss`, is signed by this university.
   */
  anchors?: string[];
  /**
   * Issuer identifier (`https://…`) whose SD-JWT VC issuer metadata (`/.well-known/jwt-vc-issuer`)
   * publishes this university's `sd-jwt-vc` keys; credentials with exactly this `iss` may use them.
   * Or a `did:web:…` DID, whose DID document publishes the keys of its W3C credentials (`jwt_vc_json`).
   */
  metadataIssuer?: string;
}

/** What happens when a credential's revocation status cannot be determined (STATUS_LIST_POLICY). */
export const STATUS_LIST_POLICIES = ['fail_closed', 'warn'] as const;
export type StatusListPolicy = (typeof STATUS_LIST_POLICIES)[number];

/** The outcome of fetching something an issuer publishes: the value, or why it could not be had. */
export type Fetched<T> =
  | { ok: true; value: T }
  /** `refused`: not fetched at all because the URL is not allowed (not a network failure). */
  | { ok: false; message: string; refused?: boolean };

/**
 * What issuers publish over HTTP (metadata, status lists), fetched through the SSRF guard with a
 * timeout and a size limit, and cached within bounds. The verifier judges what it gets: nothing
 * here is trusted until its signature is checked.
 */
export interface IssuerPublications {
  /**
   * The public keys of `issuerIdentifier`'s `/.well-known/jwt-vc-issuer` metadata (`jwks`, or the
   * set at `jwks_uri`). `refresh` asks for a fresh copy (an unknown `kid`); a copy fetched only
   * moments ago is returned instead, so that forged `kid`s cannot make us hammer the issuer.
   */
  metadataKeys(issuerIdentifier: string, options?: { refresh?: boolean }): Promise<Fetched<JsonWebKey[]>>;
  /**
   * The Token Status List token (compact JWT) published at `uri`, cached per its `ttl`/`exp` within
   * bounds. For a `sandbox` issuer (whose keys are public) only this service's own sandbox lists
   * are accepted and nothing is fetched: any other URI is `refused`. `accept`: the media type asked
   * for (a W3C status list credential is `application/vc+jwt`).
   */
  statusListToken(uri: string, options?: { sandbox?: boolean; accept?: string }): Promise<Fetched<string>>;
  /**
   * Tells the cache that the token fetched from `uri` passed the verifier's checks (signature,
   * `sub`, `exp`): only then is it kept. A token that was never verified is never served again.
   */
  statusListVerified?(uri: string, token: string): void;
  readonly statusListPolicy: StatusListPolicy;
}

/**
 * Extended key usages by the names X509_ALLOWED_EKUS accepts (RFC 5280 §4.2.1.12, RFC 9336
 * documentSigning, ISO/IEC 18013-5 mdlDS); any other is given as a dotted OID.
 */
export const EXTENDED_KEY_USAGES: Readonly<Record<string, string>> = {
  anyExtendedKeyUsage: '2.5.29.37.0',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  codeSigning: '1.3.6.1.5.5.7.3.3',
  emailProtection: '1.3.6.1.5.5.7.3.4',
  timeStamping: '1.3.6.1.5.5.7.3.8',
  OCSPSigning: '1.3.6.1.5.5.7.3.9',
  documentSigning: '1.3.6.1.5.5.7.3.36',
  mdlDocumentSigner: '1.0.18013.5.1.2',
};

/**
 * The extended key usages a credential or status list signer's certificate may state, one
 * sufficing (X509_ALLOWED_EKUS); a certificate without the extension may sign. By default the
 * document-signing purposes and anyExtendedKeyUsage: a TLS-only certificate cannot sign credentials.
 */
export const DEFAULT_ALLOWED_EKUS: readonly string[] = [
  EXTENDED_KEY_USAGES.anyExtendedKeyUsage!,
  EXTENDED_KEY_USAGES.documentSigning!,
  EXTENDED_KEY_USAGES.mdlDocumentSigner!,
];

/** How X.509 chains are judged beyond RFC 5280 path validation (docs/trust.md). */
export interface X509Policy {
  /** X509_ALLOWED_EKUS, as OIDs. */
  allowedEkus: readonly string[];
}

/** Read access to the trust registry, already narrowed to what may be trusted. */
export interface TrustRegistry {
  /** Issuers trusted in `environment` that have a key for `format`. */
  issuers(environment: Environment, format: CredentialFormat): Promise<TrustedIssuer[]>;
  /**
   * Fetching what issuers publish. Without it, entries trusted through metadata cannot be used and
   * a credential with a status entry cannot be checked (so it is not accepted, whatever the policy).
   */
  publications?: IssuerPublications;
  /** What an `x5c` leaf may be used for; {@link DEFAULT_ALLOWED_EKUS} when absent. */
  x509?: X509Policy;
}
