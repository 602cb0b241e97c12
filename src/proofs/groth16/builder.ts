import type { SnarkjsProof } from 'snarkjs';
import type { PresentationBuilder, PresentationRequest, SandboxStudent } from '../types.ts';
import { GROTH16_ARTIFACTS } from './artifacts.ts';
import { nonceField } from './fields.ts';
import { outputsToJson, type Groth16OutputsJson } from './presentation.ts';
import { issueSandboxCredential, type Groth16Credential } from './sandbox-credential.ts';
import { OUTPUT_ORDER } from './signals.ts';

/**
 * Holder side of `groth16` (wallet simulator, tests): proves with snarkjs, a devDependency (GPL)
 * loaded on first use only. The service never imports this module's dependencies.
 */

/** Proving artifacts; the defaults are the committed sandbox circuit and proving key. */
export interface ProvingArtifacts {
  wasm: string;
  zkey: string;
}

/** The wallet's presentation: see presentation.ts for how the service reads it. */
export interface Groth16PresentationJson {
  issuer: string;
  now: number;
  proof: Pick<SnarkjsProof, 'pi_a' | 'pi_b' | 'pi_c'>;
  outputs: Groth16OutputsJson;
}

/** The circuit inputs for a credential and a session (names as in the .circom file). */
export function circuitInputs(credential: Groth16Credential, request: PresentationRequest): Record<string, string> {
  return Object.fromEntries(
    Object.entries({
      issuerAx: credential.issuerAx,
      issuerAy: credential.issuerAy,
      domainHash: credential.domainHash,
      nonceField: nonceField(request.nonce, request.audience),
      now: BigInt(Math.floor(request.now.getTime() / 1000)),
      discloseLevel: request.disclose.includes('academic_level') ? 1n : 0n,
      studentSecret: credential.studentSecret,
      levelCode: credential.levelCode,
      validUntil: credential.validUntil,
      active: credential.active,
      sigR8x: credential.signature.R8x,
      sigR8y: credential.signature.R8y,
      sigS: credential.signature.S,
    }).map(([name, value]) => [name, value.toString()]),
  );
}

// snarkjs keeps one global curve whose worker threads hold the process open. Its users run one at
// a time (withSnarkjsCurve), so that none loses the curve to a release.
let queue: Promise<unknown> = Promise.resolve();

function serialized<T>(task: () => Promise<T>): Promise<T> {
  const run = queue.then(task, task);
  queue = run.catch(() => undefined);
  return run;
}

/**
 * How long snarkjs' curve (its worker threads and their WebAssembly) outlives the last proof.
 * Built again for each proof, it cost 1.0–1.2 s of the 2.5–2.7 s of CPU that a proof took; kept,
 * the next proof took 1.4–1.6 s (2026-11-27). A process that proved and has nothing else to do
 * ends when the window does (the threads hold it open until then), or at once after
 * {@link releaseSnarkjsCurve}.
 */
export const CURVE_KEPT_MS = 2000;

/** Schedules the release of a kept curve; tests replace it to step time. */
export const curveRelease: { schedule: (release: () => Promise<void>, ms: number) => { cancel(): void } } = {
  schedule: (release, ms) => {
    const timer = setTimeout(() => void release(), ms);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

let pendingRelease: { cancel(): void } | undefined;

function cancelPendingRelease(): void {
  pendingRelease?.cancel();
  pendingRelease = undefined;
}

/** Stops snarkjs' curve worker threads now (it leaves them running), so that the process can exit. */
export async function releaseSnarkjsCurve(): Promise<void> {
  cancelPendingRelease();
  const g = globalThis as { curve_bn128?: { terminate(): Promise<void> } | null };
  await g.curve_bn128?.terminate();
}

/**
 * Runs `task`, which uses snarkjs (a proof, a verification), after every other such task, and
 * keeps the curve it leaves for {@link CURVE_KEPT_MS} after: a release cannot end the curve
 * under a task.
 */
export function withSnarkjsCurve<T>(task: () => Promise<T>): Promise<T> {
  return serialized(async () => {
    cancelPendingRelease();
    try {
      return await task();
    } finally {
      pendingRelease = curveRelease.schedule(() => serialized(releaseSnarkjsCurve), CURVE_KEPT_MS);
    }
  });
}

/** Proves a credential for a session; returns snarkjs' proof and public signals. */
export function proveCredential(
  credential: Groth16Credential,
  request: PresentationRequest,
  artifacts: ProvingArtifacts = GROTH16_ARTIFACTS,
): Promise<{ proof: SnarkjsProof; publicSignals: string[] }> {
  return withSnarkjsCurve(async () => {
    const snarkjs = await import('snarkjs');
    return snarkjs.groth16.fullProve(circuitInputs(credential, request), artifacts.wasm, artifacts.zkey);
  });
}

async function present(student: SandboxStudent, request: PresentationRequest): Promise<Groth16PresentationJson> {
  const credential = await issueSandboxCredential(student);
  const { proof, publicSignals } = await proveCredential(credential, request);
  const [active, unexpired, level] = OUTPUT_ORDER.map((_, i) => BigInt(publicSignals[i]));
  return {
    issuer: student.university,
    now: Math.floor(request.now.getTime() / 1000),
    proof: { pi_a: proof.pi_a, pi_b: proof.pi_b, pi_c: proof.pi_c },
    outputs: outputsToJson({ active, unexpired, level }),
  };
}

/** Flips the `active` output: the pairing check must then fail, whatever the student's status. */
function tamper(presentation: unknown): unknown {
  const copy = structuredClone(presentation) as Groth16PresentationJson;
  copy.outputs.active = copy.outputs.active === '1' ? '0' : '1';
  return copy;
}

/** The `groth16` presentation builder of the wallet simulator. */
export const groth16Builder: PresentationBuilder = { format: 'groth16', present, tamper, release: releaseSnarkjsCurve };
