/**
 * Verification time per credential format, beside the bare library call, measured in the same run.
 *
 *   node --import tsx bench/proofs.ts [--sd-jwt-vc 200] [--bbs 50] [--groth16 50] [--warmup 10] [--json]
 *
 * Counts may also come from env BENCH_PROOFS_SD_JWT_VC, BENCH_PROOFS_BBS, BENCH_PROOFS_GROTH16,
 * BENCH_PROOFS_WARMUP (argv wins); a count of 0 skips the format. The defaults run in about a
 * minute. Figures are printed, never asserted: the ratio to the library is the number to watch.
 *
 * Presentations are built once (Groth16 proving takes seconds) and reused round-robin: verifying
 * is stateless. Each contender first accepts every valid presentation and rejects a tampered one,
 * outside the timed loop, so no row can time a failure path. In the timed loop the contenders of
 * a format run one after the other on the same presentation, their order rotating every
 * iteration, so that noise on this shared machine hits them alike. Failures inside the loop are
 * counted and printed; any failure makes the exit code 1.
 *
 * Groth16 has three contenders beside snarkjs: the service's verifier (mcl-wasm), the bare mcl
 * check and the bare @noble/curves check (the reference, and the service's verifier before it).
 * With --json the last line is one JSON object: `median_ms` and `p99_ms` of our verifier per
 * format, `library_median_ms` per format, and `groth16_vs_snarkjs` (our verifier's median over
 * snarkjs', same run), beside `groth16_noble_vs_snarkjs` for the reference, and the same in
 * process CPU time (`cpu_median_ms`, `groth16_vs_snarkjs_cpu`), which a busy machine distorts less.
 */
import { cpus, loadavg } from 'node:os';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { verifyProof } from '@digitalbazaar/bbs-signatures';
import { ES256, digest } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import * as snarkjs from 'snarkjs';
import type { ClaimName } from '../src/domain/claims.ts';
import {
  BBS_CIPHERSUITE,
  credentialHeader,
  parseBbsPresentation,
  presentationHeader,
} from '../src/proofs/bbs/index.ts';
import { encodeClaimMessage } from '../src/proofs/bbs/credential.ts';
import { createVerifiers } from '../src/proofs/formats.ts';
import { GROTH16_ARTIFACTS } from '../src/proofs/groth16/artifacts.ts';
import { releaseSnarkjsCurve, type Groth16PresentationJson } from '../src/proofs/groth16/builder.ts';
import { domainHash, nonceField } from '../src/proofs/groth16/fields.ts';
import { parsePresentation } from '../src/proofs/groth16/presentation.ts';
import { publicSignals } from '../src/proofs/groth16/signals.ts';
import { loadSandboxVerificationKey } from '../src/proofs/groth16/verification-key.ts';
import { decodeProof, verifyGroth16 } from '../src/proofs/groth16/verifier.ts';
import { decodeProofMcl, prepareVerificationKeyMcl, verifyGroth16Mcl } from '../src/proofs/groth16/mcl-verifier.ts';
import { sandboxUniversityKeyPair } from '../src/proofs/sd-jwt-vc/index.ts';
import { sandboxIssuers } from '../src/proofs/issuer-definitions.ts';
import type { PresentationContext, SandboxStudent } from '../src/proofs/types.ts';
import type { CredentialFormat as AnyFormat, TrustedIssuer, TrustRegistry } from '../src/domain/credentials.ts';

/** The formats with a presentation builder here; jwt-vc's figures come from bench/jwt-vc.ts. */
type CredentialFormat = Exclude<AnyFormat, 'jwt-vc'>;
import { BUILDERS } from '../test/support/builders.ts';

const NOW = new Date('2026-11-21T10:00:00.000Z');
const UNIVERSITY = 'sandbox-state.example'; // ES256 for sd-jwt-vc, the default algorithm
const CLAIMS: readonly ClaimName[] = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'];
const CONTEXT: PresentationContext = {
  nonce: 'nonce_bench-proofs-1',
  audience: 'https://verify.example',
  now: NOW,
  environment: 'sandbox',
  requiredClaims: CLAIMS,
};
/** Distinct presentations per format (different students, salts, proof randomness). */
const PRESENTATIONS: Record<CredentialFormat, number> = { 'sd-jwt-vc': 16, bbs: 8, groth16: 3 };
const DEFAULT_COUNTS: Record<CredentialFormat, number> = { 'sd-jwt-vc': 200, bbs: 50, groth16: 50 };

const ISSUERS: TrustedIssuer[] = sandboxIssuers().map((issuer, i) => ({ ...issuer, id: `iss_bench${i}` }));
const KEY_OF = { 'sd-jwt-vc': 'sdJwtVc', 'jwt-vc': 'sdJwtVc', bbs: 'bbs', groth16: 'babyJubJub' } as const;
const REGISTRY: TrustRegistry = {
  issuers: async (environment, format) =>
    ISSUERS.filter((i) => i.environment === environment && i.keys[KEY_OF[format]] !== undefined),
};
const REGISTRY_ISSUER = ISSUERS.find((i) => i.domain === UNIVERSITY)!;

/** One timed call with its inputs prepared; resolves whether the presentation was accepted. */
type Call = () => Promise<boolean>;

/** A way of verifying: `prepare` does, untimed, the work that is not the verification itself. */
interface Contender {
  label: string;
  prepare(presentation: unknown): Call;
}

/** Two contenders compared in one row of the table. */
interface Row {
  name: string;
  ours: Contender;
  library: Contender;
}

interface Bench {
  format: CredentialFormat;
  contenders: Contender[];
  rows: Row[];
}

const verifiers = createVerifiers();
const ourVerifier = (format: CredentialFormat): Contender => ({
  label: `verifiers['${format}'].verify`,
  prepare: (p) => async () => (await verifiers[format].verify(p, CONTEXT, REGISTRY)).ok,
});

async function sdJwtBench(): Promise<Bench> {
  const issuerKey = sandboxUniversityKeyPair(UNIVERSITY)!;
  // As in test/proofs/proofs-sd-jwt-vc.test.ts: the issuer key is imported once, the holder's per call from cnf.jwk.
  const library = new SDJwtVcInstance({
    hasher: digest,
    verifier: await ES256.getVerifier(issuerKey.publicJwk),
    kbVerifier: async (data, signature, payload) => (await ES256.getVerifier(payload.cnf!.jwk))(data, signature),
  });
  const options = { keyBindingNonce: CONTEXT.nonce, currentDate: Math.floor(NOW.getTime() / 1000) };
  const ours = ourVerifier('sd-jwt-vc');
  const bare: Contender = {
    label: 'SDJwtVcInstance.verify',
    prepare: (p) => async () => {
      try {
        const result = await library.verify(p as string, options);
        return (result.payload as Record<string, unknown>).is_active_student === true && result.kb !== undefined;
      } catch {
        return false;
      }
    },
  };
  return { format: 'sd-jwt-vc', contenders: [ours, bare], rows: [{ name: 'sd-jwt-vc', ours, library: bare }] };
}

function bbsBench(): Bench {
  const publicKey = Buffer.from(REGISTRY_ISSUER.keys.bbs!, 'base64url');
  const ours = ourVerifier('bbs');
  // The very call bbs/verifier.ts makes, with the inputs it derives from the presentation and context.
  const bare: Contender = {
    label: 'bbs-signatures verifyProof',
    prepare: (p) => {
      const parsed = parseBbsPresentation(p);
      if (!parsed.ok) return async () => false;
      const { proof, disclosed, now } = parsed.presentation;
      const input = {
        publicKey,
        proof,
        header: credentialHeader(REGISTRY_ISSUER.domain),
        presentationHeader: presentationHeader(CONTEXT.audience, CONTEXT.nonce, now),
        disclosedMessages: disclosed.map((m) => encodeClaimMessage(m.claim, m.value)),
        disclosedMessageIndexes: disclosed.map((m) => m.index),
        ciphersuite: BBS_CIPHERSUITE,
      } as const;
      return () => verifyProof(input).catch(() => false);
    },
  };
  return { format: 'bbs', contenders: [ours, bare], rows: [{ name: 'bbs', ours, library: bare }] };
}

/** The public signals our verifier assembles for `p` (outputs from the client, inputs of our own). */
function groth16Signals(p: unknown): bigint[] | undefined {
  const presentation = parsePresentation(p);
  const key = REGISTRY_ISSUER.keys.babyJubJub!;
  if (!presentation) return undefined;
  return publicSignals(presentation.outputs, {
    issuerAx: BigInt(key.x),
    issuerAy: BigInt(key.y),
    domainHash: domainHash(REGISTRY_ISSUER.domain),
    nonceField: nonceField(CONTEXT.nonce, CONTEXT.audience),
    now: BigInt(presentation.now),
    discloseLevel: presentation.outputs.level !== 0n ? 1n : 0n,
  });
}

async function groth16Bench(): Promise<Bench> {
  const vkJson: unknown = JSON.parse(readFileSync(GROTH16_ARTIFACTS.verificationKey, 'utf8'));
  const vk = loadSandboxVerificationKey(); // decoded once, as the service does at start
  const mclKey = await prepareVerificationKeyMcl(vk); // prepared once, as the service does on first use
  const ours = ourVerifier('groth16');
  const bareMcl: Contender = {
    label: 'decodeProofMcl + verifyGroth16Mcl',
    prepare: (p) => {
      const signals = groth16Signals(p);
      const proofJson = (p as Groth16PresentationJson).proof;
      return async () => {
        const proof = decodeProofMcl(proofJson);
        return signals !== undefined && typeof proof !== 'string' && verifyGroth16Mcl(mclKey, proof, signals);
      };
    },
  };
  const bareNoble: Contender = {
    label: 'decodeProof + verifyGroth16 (noble)',
    prepare: (p) => {
      const signals = groth16Signals(p);
      const proofJson = (p as Groth16PresentationJson).proof;
      return async () => {
        const proof = decodeProof(proofJson);
        return signals !== undefined && typeof proof !== 'string' && verifyGroth16(vk, proof, signals);
      };
    },
  };
  const snark: Contender = {
    label: 'snarkjs.groth16.verify',
    prepare: (p) => {
      const signals = groth16Signals(p)?.map(String);
      const proof = (p as Groth16PresentationJson).proof;
      return async () => signals !== undefined && (await snarkjs.groth16.verify(vkJson, signals, proof));
    },
  };
  return {
    format: 'groth16',
    contenders: [ours, bareMcl, bareNoble, snark],
    rows: [
      { name: 'groth16', ours, library: snark },
      { name: 'groth16 mcl', ours: bareMcl, library: snark },
      { name: 'groth16 noble', ours: bareNoble, library: snark },
    ],
  };
}

async function presentations(format: CredentialFormat): Promise<unknown[]> {
  const made: unknown[] = [];
  for (let i = 0; i < PRESENTATIONS[format]; i++) {
    const student: SandboxStudent = {
      university: UNIVERSITY,
      active: true,
      academicLevel: 'postgraduate',
      validUntil: '2027-06-30T00:00:00.000Z',
      holderSeed: `bench-student-${i}`,
    };
    made.push(
      await BUILDERS[format].present(student, {
        nonce: CONTEXT.nonce,
        audience: CONTEXT.audience,
        now: NOW,
        disclose: CLAIMS,
      }),
    );
  }
  // The prover keeps snarkjs' curve for a while and then ends it, which would end it under a timed
  // snarkjs.groth16.verify below: release it now (a verification builds its own).
  await releaseSnarkjsCurve();
  return made;
}

/** Untimed: every contender must accept every valid presentation and reject a tampered one. */
async function assertContendersDiscriminate(bench: Bench, valid: unknown[]): Promise<void> {
  const tampered = BUILDERS[bench.format].tamper(valid[0]);
  for (const c of bench.contenders) {
    for (const [i, p] of valid.entries()) {
      if (!(await c.prepare(p)())) throw new Error(`${bench.format}: ${c.label} rejects valid presentation #${i}`);
    }
    if (await c.prepare(tampered)()) throw new Error(`${bench.format}: ${c.label} accepts a tampered presentation`);
  }
}

interface Samples {
  ms: Float64Array;
  /** CPU time of the whole process (all threads: snarkjs has workers) during the call. */
  cpuMs: Float64Array;
  failures: number;
}

/** Times `n` rounds; in round i every contender verifies presentation i mod k, in rotated order. */
async function measure(contenders: Contender[], valid: unknown[], n: number, warmup: number): Promise<Samples[]> {
  const calls = contenders.map((c) => valid.map((p) => c.prepare(p)));
  for (let i = 0; i < warmup; i++) for (const byPresentation of calls) await byPresentation[i % valid.length]();
  const samples = contenders.map(() => ({ ms: new Float64Array(n), cpuMs: new Float64Array(n), failures: 0 }));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < contenders.length; j++) {
      const c = (i + j) % contenders.length;
      const call = calls[c][i % valid.length];
      const cpuStart = process.cpuUsage();
      const start = performance.now();
      const ok = await call();
      samples[c].ms[i] = performance.now() - start;
      const cpu = process.cpuUsage(cpuStart);
      samples[c].cpuMs[i] = (cpu.user + cpu.system) / 1000;
      if (!ok) samples[c].failures++;
    }
  }
  return samples;
}

/** Nearest-rank percentile: with n = 50, p99 is the slowest sample. */
function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

function summary(s: Samples): { median: number; p99: number; cpuMedian: number } {
  const sorted = Float64Array.from(s.ms).sort();
  const cpu = Float64Array.from(s.cpuMs).sort();
  return { median: percentile(sorted, 50), p99: percentile(sorted, 99), cpuMedian: percentile(cpu, 50) };
}

const { values: ARGS } = parseArgs({
  options: {
    'sd-jwt-vc': { type: 'string' },
    bbs: { type: 'string' },
    groth16: { type: 'string' },
    warmup: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});

/** `--name N`, else env `BENCH_PROOFS_<NAME>`, else the default. */
function count(name: Exclude<keyof typeof ARGS, 'json'>, fallback: number): number {
  const raw = ARGS[name] ?? process.env[`BENCH_PROOFS_${name.replaceAll('-', '_').toUpperCase()}`];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`--${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

const fmt = (ms: number): string => ms.toFixed(3).padStart(10);

async function main(): Promise<void> {
  const warmup = count('warmup', 10);
  const plan: Array<[CredentialFormat, () => Bench | Promise<Bench>]> = [
    ['sd-jwt-vc', sdJwtBench],
    ['bbs', bbsBench],
    ['groth16', groth16Bench],
  ];
  console.log(
    `node ${process.version}, ${cpus().length} cpus, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; times in ms`,
  );
  const lines: string[] = [];
  const rowMedians: Record<string, RowFigures> = {};
  let failures = 0;
  for (const [format, make] of plan) {
    const n = count(format, DEFAULT_COUNTS[format]);
    if (n === 0) continue;
    const bench = await make();
    const setup = performance.now();
    const valid = await presentations(format);
    console.log(
      `${format}: ${valid.length} presentations built in ${((performance.now() - setup) / 1000).toFixed(1)} s`,
    );
    await assertContendersDiscriminate(bench, valid);
    const samples = await measure(bench.contenders, valid, n, warmup);
    for (const row of bench.rows) {
      const o = samples[bench.contenders.indexOf(row.ours)];
      const l = samples[bench.contenders.indexOf(row.library)];
      const [os, ls] = [summary(o), summary(l)];
      failures += o.failures + l.failures;
      rowMedians[row.name] = {
        median: os.median,
        p99: os.p99,
        library: ls.median,
        cpu: os.cpuMedian,
        libraryCpu: ls.cpuMedian,
      };
      lines.push(
        `${row.name.padEnd(13)}${String(n).padStart(5)}${fmt(os.median)}${fmt(os.p99)}${fmt(ls.median)}${fmt(ls.p99)}${(os.median / ls.median).toFixed(2).padStart(8)}${String(o.failures + l.failures).padStart(6)}   ${row.ours.label} vs ${row.library.label}`,
      );
    }
  }
  console.log(
    `\n${'format'.padEnd(13)}${'n'.padStart(5)}${'our med'.padStart(10)}${'our p99'.padStart(10)}${'lib med'.padStart(10)}${'lib p99'.padStart(10)}${'ratio'.padStart(8)}${'fail'.padStart(6)}   ours vs library`,
  );
  for (const line of lines) console.log(line);
  // Wall time on a loaded machine includes waiting for a core; CPU time does not, so its ratio
  // holds better when the machine is busy.
  console.log(`\n${'cpu time'.padEnd(13)}${'our med'.padStart(10)}${'lib med'.padStart(10)}${'ratio'.padStart(8)}`);
  for (const [name, r] of Object.entries(rowMedians)) {
    console.log(`${name.padEnd(13)}${fmt(r.cpu)}${fmt(r.libraryCpu)}${(r.cpu / r.libraryCpu).toFixed(2).padStart(8)}`);
  }
  console.log(
    `\nratio = our median / library median; load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (failures > 0) process.exitCode = 1;
  if (ARGS.json) console.log(JSON.stringify(jsonSummary(rowMedians)));
}

/** The --json line: our verifier per format, and the Groth16 ratios to snarkjs of the same run. */
interface RowFigures {
  median: number;
  p99: number;
  library: number;
  cpu: number;
  libraryCpu: number;
}

function jsonSummary(rows: Record<string, RowFigures>) {
  const formats = (['sd-jwt-vc', 'bbs', 'groth16'] as const).filter((f) => rows[f]);
  const perFormat = (pick: (r: (typeof rows)[string]) => number) =>
    Object.fromEntries(formats.map((f) => [f, Number(pick(rows[f]).toFixed(3))]));
  const ratio = (name: string, pick = (r: RowFigures) => [r.median, r.library]) => {
    if (!rows[name]) return null;
    const [ours, library] = pick(rows[name]);
    return Number((ours / library).toFixed(3));
  };
  return {
    median_ms: perFormat((r) => r.median),
    p99_ms: perFormat((r) => r.p99),
    library_median_ms: perFormat((r) => r.library),
    groth16_vs_snarkjs: ratio('groth16'),
    groth16_noble_vs_snarkjs: ratio('groth16 noble'),
    cpu_median_ms: perFormat((r) => r.cpu),
    groth16_vs_snarkjs_cpu: ratio('groth16', (r) => [r.cpu, r.libraryCpu]),
  };
}

try {
  await main();
} finally {
  await releaseSnarkjsCurve();
}
