import type { Environment } from './environment.ts';

/** The credential formats a presentation can come in (spec §4). */
export const CREDENTIAL_FORMATS = ['sd-jwt-vc', 'bbs', 'groth16'] as const;
export type CredentialFormat = (typeof CREDENTIAL_FORMATS)[number];

/** Public key material of one issuer, one entry per format it issues in. */
export interface IssuerKeys {
  /** Public JWK (ES256 on P-256, or EdDSA on Ed25519) for `sd-jwt-vc`. */
  sdJwtVc?: JsonWebKey;
  /** BLS12-381 G2 public key (96 bytes), base64url, for `bbs`. */
  bbs?: string;
  /** BabyJubJub public key point, decimal strings, for `groth16`. */
  babyJubJub?: { x: string; y: string };
}

/** Which {@link IssuerKeys} entry verifies each format. */
export const KEY_OF_FORMAT: Readonly<Record<CredentialFormat, keyof IssuerKeys>> = {
  'sd-jwt-vc': 'sdJwtVc',
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
  keys: IssuerKeys;
}

/** Read access to the trust registry, already narrowed to what may be trusted. */
export interface TrustRegistry {
  /** Issuers trusted in `environment` that have a key for `format`. */
  issuers(environment: Environment, format: CredentialFormat): Promise<TrustedIssuer[]>;
}
