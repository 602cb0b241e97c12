import { isPresentationTime } from '../freshness.ts';
import { parseFieldElement } from './fields.ts';
import type { CircuitOutputs } from './signals.ts';

/**
 * The JSON value a wallet submits as a `groth16` presentation:
 *
 * ```json
 * { "issuer": "sandbox-state.example", "now": 1795000000,
 *   "proof": { "pi_a": [...], "pi_b": [...], "pi_c": [...] },
 *   "outputs": { "active": "1", "unexpired": "1", "level": "0" } }
 * ```
 *
 * A `publicSignals` field, as snarkjs produces it, is tolerated and ignored: the service builds
 * the public inputs itself and takes only the circuit outputs from the client, which the pairing
 * check then vouches for.
 */
export interface Groth16Presentation {
  /** Domain of the university whose registry key the proof is checked against. */
  issuer: string;
  /** Unix seconds the proof used as `now`; accepted 60 s behind to 30 s ahead of the service clock (freshness.ts). */
  now: number;
  /** The proof in snarkjs JSON form, decoded later by the verifier. */
  proof: unknown;
  outputs: CircuitOutputs;
}

/** The JSON form of {@link CircuitOutputs}: decimal strings. */
export interface Groth16OutputsJson {
  active: string;
  unexpired: string;
  level: string;
}

/** Decodes the envelope; undefined when its shape is wrong. Proof points are decoded separately. */
export function parsePresentation(value: unknown): Groth16Presentation | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { issuer, now, proof, outputs } = value as Record<string, unknown>;
  if (typeof issuer !== 'string' || issuer.length === 0 || issuer.length > 253) return undefined;
  if (!isPresentationTime(now)) return undefined;
  if (typeof proof !== 'object' || proof === null) return undefined;
  if (typeof outputs !== 'object' || outputs === null) return undefined;
  const o = outputs as Record<string, unknown>;
  const active = parseFieldElement(o.active);
  const unexpired = parseFieldElement(o.unexpired);
  const level = parseFieldElement(o.level);
  if (active === undefined || unexpired === undefined || level === undefined) return undefined;
  return { issuer, now, proof, outputs: { active, unexpired, level } };
}

/** The JSON form of circuit outputs, as the wallet sends them. */
export function outputsToJson(outputs: CircuitOutputs): Groth16OutputsJson {
  return {
    active: outputs.active.toString(),
    unexpired: outputs.unexpired.toString(),
    level: outputs.level.toString(),
  };
}
