/**
 * The few parts of snarkjs and circomlibjs (GPL, devDependencies, untyped) that the wallet-side
 * builder, the build script and the tests use. The service never imports them.
 */

declare module 'snarkjs' {
  /** A proof in snarkjs JSON form: projective coordinates as decimal strings. */
  export interface SnarkjsProof {
    pi_a: string[];
    pi_b: string[][];
    pi_c: string[];
    protocol?: string;
    curve?: string;
  }
  export const groth16: {
    fullProve(
      input: Record<string, string | string[]>,
      wasmFile: string,
      zkeyFile: string,
    ): Promise<{ proof: SnarkjsProof; publicSignals: string[] }>;
    verify(verificationKey: unknown, publicSignals: string[], proof: SnarkjsProof): Promise<boolean>;
  };
}

declare module 'circomlibjs' {
  /** An element of the BN254 scalar field in circomlibjs' internal (Montgomery) form. */
  type FieldElement = Uint8Array;
  interface Field {
    e(value: bigint | string | number): FieldElement;
    toObject(value: FieldElement): bigint;
  }
  export interface Eddsa {
    F: Field;
    prv2pub(privateKey: Uint8Array): [FieldElement, FieldElement];
    signPoseidon(privateKey: Uint8Array, message: FieldElement): { R8: [FieldElement, FieldElement]; S: bigint };
    verifyPoseidon(
      message: FieldElement,
      signature: { R8: [FieldElement, FieldElement]; S: bigint },
      publicKey: [FieldElement, FieldElement],
    ): boolean;
  }
  export interface Poseidon {
    (inputs: Array<bigint | FieldElement>): FieldElement;
    F: Field;
  }
  export function buildEddsa(): Promise<Eddsa>;
  export function buildPoseidon(): Promise<Poseidon>;
}
