/**
 * The circuit's public signals, in the order the proof commits to them: the outputs first, then
 * the public inputs in declaration order (circuits/student-credential.circom). The service
 * assembles them itself; it never takes a public signal list from the client.
 */

/** Values the circuit computes; the service reads them from the presentation, the pairing vouches for them. */
export interface CircuitOutputs {
  /** The signed `active` bit (0 or 1). */
  active: bigint;
  /** 1 if validUntil > now, else 0. */
  unexpired: bigint;
  /** The academic level code if discloseLevel = 1, else 0. */
  level: bigint;
}

/** Values the verifier supplies from its own state. */
export interface CircuitPublicInputs {
  issuerAx: bigint;
  issuerAy: bigint;
  domainHash: bigint;
  nonceField: bigint;
  /** Unix seconds. */
  now: bigint;
  /** 1 to have the circuit output the academic level code, 0 to keep it hidden. */
  discloseLevel: bigint;
}

export const OUTPUT_ORDER = ['active', 'unexpired', 'level'] as const satisfies readonly (keyof CircuitOutputs)[];
export const PUBLIC_INPUT_ORDER = [
  'issuerAx',
  'issuerAy',
  'domainHash',
  'nonceField',
  'now',
  'discloseLevel',
] as const satisfies readonly (keyof CircuitPublicInputs)[];

/** Number of public signals (the verification key's nPublic). */
export const PUBLIC_SIGNAL_COUNT = OUTPUT_ORDER.length + PUBLIC_INPUT_ORDER.length;

/** The public signal vector a proof is checked against. */
export function publicSignals(outputs: CircuitOutputs, inputs: CircuitPublicInputs): bigint[] {
  return [...OUTPUT_ORDER.map((k) => outputs[k]), ...PUBLIC_INPUT_ORDER.map((k) => inputs[k])];
}
