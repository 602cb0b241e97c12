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
import type { Groth16Pairing } from './pairing.ts';
import type { Groth16VerificationKey } from './verifier.ts';
import { presentationTimeProblem } from '../freshness.ts';
import { GROTH16_ARTIFACTS } from './artifacts.ts';
import type { ProofDecodeError } from './proof-json.ts';
import { inProcessRunner, type ProofRunner } from '../worker/tasks.ts';

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
  /**
   * Where the default pairing (mcl-wasm) runs: a worker thread of the service's proof pool, or
   * the calling thread (the default). Not used with an explicit `pairing`, which runs here.
   */
  runner?: ProofRunner;
}

/** A proof check that may run on another thread. */
type ProofCheck = (proof: unknown, signals: readonly bigint[]) => Promise<boolean | ProofDecodeError>;

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
  const keyPaths: Partial<Record<Environment, string>> = {
    sandbox: options.sandboxVerificationKeyPath ?? GROTH16_ARTIFACTS.verificationKey,
    live: options.liveVerificationKeyPath,
  };
  const { pairing, runner = inProcessRunner } = options;
  // Prepared on first use (mcl loads its WebAssembly then), once per key; the verify call awaits it.
  const checks: Partial<Record<Environment, Promise<ProofCheck>>> = {};
  const checkFor = (environment: Environment): Promise<ProofCheck> | undefined => {
    const vk = keys[environment];
    const keyPath = keyPaths[environment];
    if (!vk || keyPath === undefined) return undefined;
    // The runner prepares the key in the thread that checks, once per thread (worker/tasks.ts).
    if (!pairing)
      return Promise.resolve((proof, signals) =>
        runner.run({ kind: 'groth16-check', keyPath, proof, signals: [...signals] }),
      );
    let check = checks[environment];
    if (!check) {
      // A failure is the caller's error, and the next call tries again.
      check = checks[environment] = pairing.prepare(vk).then(
        (sync): ProofCheck =>
          async (proof, signals) =>
            sync(proof, signals),
        (error: unknown) => {
          delete checks[environment];
          throw error;
        },
      );
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
  prepared: Promise<ProofCheck> | undefined,
  value: unknown,
  context: PresentationContext,
  registry: TrustRegistry,
): Promise<PresentationCheck> {
  if (!prepared)
    return reject('unsupported_format', `no groth16 verification key is installed for ${context.environment}`);
  const presentation = parsePresentation(value);
  if (!presentation)
    return reject('malformed_presentation', 'expected {issuer, now, proof, outputs} with decimal-string outputs');
  // The proof shows valid_until > now: a stale `now` would let an expired credential pass.
  const timeProblem = presentationTimeProblem(presentation.now, context.now);
  if (timeProblem) return reject('stale_presentation', timeProblem);
  const outputsProblem = checkOutputs(presentation);
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
    discloseLevel: disclosesLevel(presentation) ? 1n : 0n,
  };
  const check = await prepared;
  const outcome = await check(presentation.proof, publicSignals(presentation.outputs, inputs));
  if (outcome === 'malformed')
    return reject('malformed_presentation', 'proof must be {pi_a, pi_b, pi_c} in snarkjs JSON form');
  if (outcome === 'invalid_point') return reject('invalid_proof', 'a proof point is not a valid group element');
  if (!outcome) {
    return reject('invalid_proof', 'the proof does not verify for this issuer, session and time');
  }
  // Checked once the proof holds, so that the reason is about a genuine presentation.
  if (disclosesLevel(presentation) && context.requiredClaims && !context.requiredClaims.includes('academic_level')) {
    return reject(
      'unrequested_disclosure',
      'the proof discloses academic_level, which was not requested: prove with discloseLevel = 0, or ask for academic_level',
    );
  }
  return { ok: true, presentation: verified(issuer.entry, presentation) };
}

/**
 * Whether the proof was made with discloseLevel = 1. The circuit outputs level = discloseLevel ×
 * levelCode and no catalogue level has code 0, so a non-zero level means the holder disclosed it.
 * The verifier takes discloseLevel from there and checks the proof against it: a proof made
 * with the other value does not verify, and a zero level proves nothing about the level.
 */
function disclosesLevel(p: Groth16Presentation): boolean {
  return p.outputs.level !== 0n;
}

/** Outputs the circuit can only produce as bits or a known level code: anything else is not a proof of ours. */
function checkOutputs(p: Groth16Presentation): Rejection | undefined {
  const { active, unexpired, level } = p.outputs;
  if (active > 1n || unexpired > 1n)
    return reject('malformed_presentation', 'outputs.active and outputs.unexpired must be 0 or 1');
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
