import { academicLevelFromCode, type DisclosedClaims } from '../../domain/claims.ts';
import type {
  Environment,
  PresentationCheck,
  PresentationContext,
  PresentationVerifier,
  RejectionReason,
  TrustedIssuer,
  TrustRegistry,
} from '../types.ts';
import { domainHash, nonceField, parseFieldElement } from './fields.ts';
import { parsePresentation, type Groth16Presentation } from './presentation.ts';
import { publicSignals, type CircuitPublicInputs } from './signals.ts';
import { loadLiveVerificationKey, loadSandboxVerificationKey, loadVerificationKey } from './verification-key.ts';
import { mclPairing, type Groth16Pairing, type Groth16ProofCheck } from './pairing.ts';
import type { Groth16VerificationKey } from './verifier.ts';

/**
 * How far the presentation's `now` may be behind the service's clock. The proof shows
 * `valid_until > now`, so this is also how long after `valid_until` an expired credential can
 * still prove `unexpired = 1`: a minute, time enough for a phone to prove and send.
 */
export const MAX_NOW_BEHIND_SECONDS = 60;
/** How far the presentation's `now` may be ahead of the service's clock (a wallet's clock running fast). */
export const MAX_NOW_AHEAD_SECONDS = 30;

/** Where the service takes its verification keys from. */
export interface Groth16VerifierOptions {
  /** Key for sandbox sessions. Default: the committed sandbox key (src/proofs/groth16/artifacts). */
  sandboxVerificationKeyPath?: string;
  /**
   * Key from the operator's multi-party ceremony, for live sessions. No default: until one is
   * installed, live `groth16` presentations are refused, because the sandbox key's toxic waste
   * is public. The committed sandbox key is refused here.
   */
  liveVerificationKeyPath?: string;
  /**
   * What checks the pairing equation. Default: mcl-wasm (WebAssembly). The tests run the same
   * presentations through @noble/curves (`noblePairing`), the reference, and compare.
   */
  pairing?: Groth16Pairing;
}

type Rejection = Extract<PresentationCheck, { ok: false }>;
const reject = (reason: RejectionReason, message: string): Rejection => ({ ok: false, reason, message });

/**
 * The `groth16` verifier. Reads its keys once, here (throws if one is unusable), so that a bad
 * installation stops the service at start rather than failing every presentation.
 */
export function createGroth16Verifier(options: Groth16VerifierOptions = {}): PresentationVerifier {
  const sandboxKey = loadSandboxVerificationKey();
  const keys: Partial<Record<Environment, Groth16VerificationKey>> = {
    sandbox: options.sandboxVerificationKeyPath ? loadVerificationKey(options.sandboxVerificationKeyPath) : sandboxKey,
  };
  // Refuses a degenerate key (δ = ±γ, δ the generator: forgeable from the key alone) and the sandbox key.
  if (options.liveVerificationKeyPath) keys.live = loadLiveVerificationKey(options.liveVerificationKeyPath);
  const pairing = options.pairing ?? mclPairing;
  // Prepared on first use (mcl loads its WebAssembly then), once per key; the verify call awaits it.
  const checks: Partial<Record<Environment, Promise<Groth16ProofCheck>>> = {};
  const checkFor = (environment: Environment): Promise<Groth16ProofCheck> | undefined => {
    const vk = keys[environment];
    if (!vk) return undefined;
    let check = checks[environment];
    if (!check) {
      // A failure is the caller's error, and the next call tries again.
      check = checks[environment] = pairing.prepare(vk).catch((error: unknown) => {
        delete checks[environment];
        throw error;
      });
      // Awaited only after the registry lookup: marked handled so that an early failure does not
      // count as an unhandled rejection meanwhile.
      check.catch(() => undefined);
    }
    return check;
  };
  return {
    format: 'groth16',
    verify: (presentation, context, registry) =>
      verifyPresentation(checkFor(context.environment), presentation, context, registry),
  };
}

async function verifyPresentation(
  prepared: Promise<Groth16ProofCheck> | undefined,
  value: unknown,
  context: PresentationContext,
  registry: TrustRegistry,
): Promise<PresentationCheck> {
  if (!prepared)
    return reject('unsupported_format', `no groth16 verification key is installed for ${context.environment}`);
  const presentation = parsePresentation(value);
  if (!presentation)
    return reject('malformed_presentation', 'expected {issuer, now, proof, outputs} with decimal-string outputs');
  const serviceNow = Math.floor(context.now.getTime() / 1000);
  if (serviceNow - presentation.now > MAX_NOW_BEHIND_SECONDS || presentation.now - serviceNow > MAX_NOW_AHEAD_SECONDS) {
    return reject(
      'stale_presentation',
      `now must be at most ${MAX_NOW_BEHIND_SECONDS} s behind and ${MAX_NOW_AHEAD_SECONDS} s ahead of the service clock`,
    );
  }
  const outputsProblem = checkOutputs(presentation, context);
  if (outputsProblem) return outputsProblem;
  const issuer = await findIssuer(registry, context.environment, presentation.issuer);
  if (!issuer)
    return reject('untrusted_issuer', `no trusted ${context.environment} groth16 issuer for ${presentation.issuer}`);
  const inputs: CircuitPublicInputs = {
    issuerAx: issuer.key.x,
    issuerAy: issuer.key.y,
    domainHash: domainHash(issuer.entry.domain),
    nonceField: nonceField(context.nonce, context.audience),
    now: BigInt(presentation.now),
    discloseLevel: wantsLevel(context) ? 1n : 0n,
  };
  const check = await prepared;
  const outcome = check(presentation.proof, publicSignals(presentation.outputs, inputs));
  if (outcome === 'malformed')
    return reject('malformed_presentation', 'proof must be {pi_a, pi_b, pi_c} in snarkjs JSON form');
  if (outcome === 'invalid_point') return reject('invalid_proof', 'a proof point is not a valid group element');
  if (!outcome) {
    return reject('invalid_proof', 'the proof does not verify for this issuer, session and time');
  }
  return { ok: true, presentation: verified(issuer.entry, presentation) };
}

function wantsLevel(context: PresentationContext): boolean {
  return context.requiredClaims.includes('academic_level');
}

/** Outputs the circuit can only produce as bits or a known level code: anything else is not a proof of ours. */
function checkOutputs(p: Groth16Presentation, context: PresentationContext): Rejection | undefined {
  const { active, unexpired, level } = p.outputs;
  if (active > 1n || unexpired > 1n)
    return reject('malformed_presentation', 'outputs.active and outputs.unexpired must be 0 or 1');
  if (!wantsLevel(context) && level !== 0n)
    return reject('malformed_presentation', 'outputs.level must be 0 when the level is not requested');
  if (level !== 0n && levelName(level) === undefined) {
    return reject('malformed_presentation', 'outputs.level is not a known academic level code');
  }
  return undefined;
}

/** The academic level a code stands for (codes are small; larger values are nobody's level). */
function levelName(code: bigint): string | undefined {
  return code > 0n && code <= 0xffffn ? academicLevelFromCode(Number(code)) : undefined;
}

/** The registry entry for `domain` and its BabyJubJub key; entries without a usable key do not count. */
async function findIssuer(registry: TrustRegistry, environment: Environment, domain: string) {
  for (const entry of await registry.issuers(environment, 'groth16')) {
    if (entry.domain !== domain) continue;
    const x = parseFieldElement(entry.keys.babyJubJub?.x);
    const y = parseFieldElement(entry.keys.babyJubJub?.y);
    if (x !== undefined && y !== undefined) return { entry, key: { x, y } };
  }
  return undefined;
}

function verified(
  issuer: TrustedIssuer,
  p: Groth16Presentation,
): Extract<PresentationCheck, { ok: true }>['presentation'] {
  const claims: DisclosedClaims = {
    is_active_student: p.outputs.active === 1n,
    university_domain: issuer.domain,
  };
  const level = levelName(p.outputs.level);
  if (level) claims.academic_level = level;
  return { format: 'groth16', issuer, claims, predicates: { validUntilAfterNow: p.outputs.unexpired === 1n } };
}
