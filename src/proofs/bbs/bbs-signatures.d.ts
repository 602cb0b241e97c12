/**
 * Types for the part of `@digitalbazaar/bbs-signatures` v3 that Matricula uses (the package ships
 * plain JavaScript without declarations). Names and shapes follow its lib/index.js.
 */
declare module '@digitalbazaar/bbs-signatures' {
  export type BbsCiphersuite = 'BLS12-381-SHA-256' | 'BLS12-381-SHAKE-256';

  export const CIPHERSUITES: { BLS12381_SHAKE256: 'BLS12-381-SHAKE-256'; BLS12381_SHA256: 'BLS12-381-SHA-256' };

  /**
   * KeyGen of the draft: `seed` is the `key_material` (at least 32 bytes; random when absent).
   * `secretKey` is the big-endian scalar, `publicKey` the compressed G2 point (96 bytes).
   */
  export function generateKeyPair(options: {
    seed?: Uint8Array;
    ciphersuite: BbsCiphersuite;
  }): Promise<{ secretKey: Uint8Array; publicKey: Uint8Array }>;

  export function secretKeyToPublicKey(options: {
    secretKey: Uint8Array;
    ciphersuite: BbsCiphersuite;
  }): Promise<Uint8Array>;

  export function sign(options: {
    secretKey: Uint8Array;
    publicKey: Uint8Array;
    header: Uint8Array;
    messages: Uint8Array[];
    ciphersuite: BbsCiphersuite;
  }): Promise<Uint8Array>;

  export function verifySignature(options: {
    publicKey: Uint8Array;
    signature: Uint8Array;
    header: Uint8Array;
    messages: Uint8Array[];
    ciphersuite: BbsCiphersuite;
  }): Promise<boolean>;

  export function deriveProof(options: {
    publicKey: Uint8Array;
    signature: Uint8Array;
    header: Uint8Array;
    messages: Uint8Array[];
    presentationHeader: Uint8Array;
    disclosedMessageIndexes: number[];
    ciphersuite: BbsCiphersuite;
  }): Promise<Uint8Array>;

  /** Resolves `false` for a proof that does not hold; throws on undecodable input (bad point, size). */
  export function verifyProof(options: {
    publicKey: Uint8Array;
    proof: Uint8Array;
    header: Uint8Array;
    presentationHeader: Uint8Array;
    disclosedMessages: Uint8Array[];
    disclosedMessageIndexes: number[];
    ciphersuite: BbsCiphersuite;
  }): Promise<boolean>;
}
