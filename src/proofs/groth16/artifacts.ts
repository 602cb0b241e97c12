import { fileURLToPath } from 'node:url';

/**
 * Where the committed build outputs of `scripts/groth16-build.sh` live. The service reads only
 * the verification key and the sandbox issuer keys; the wallet simulator also reads the circuit
 * (.wasm) and the proving key (.zkey).
 */
const dir = (name: string): string => fileURLToPath(new URL(`./artifacts/${name}`, import.meta.url));

export const GROTH16_ARTIFACTS = {
  /** Witness generator compiled from circuits/student-credential.circom. */
  wasm: dir('student-credential.wasm'),
  /** Sandbox proving key (single-party setup, see docs/zk-groth16.md). */
  zkey: dir('student-credential.zkey'),
  /** Sandbox verification key, snarkjs JSON. */
  verificationKey: dir('verification_key.json'),
  /** BabyJubJub public keys of the sandbox universities, by domain. */
  sandboxIssuers: dir('sandbox-issuers.json'),
  /** Constraint count, ptau power, beacons and artifact hashes of the last build. */
  buildInfo: dir('build-info.json'),
} as const;
