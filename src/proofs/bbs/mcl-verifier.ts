import { createRequire } from 'node:module';
import path from 'node:path';
import { bls12_381 } from '@noble/curves/bls12-381';
import { expand_message_xmd } from '@noble/curves/abstract/hash-to-curve';
import { bytesToNumberBE, concatBytes, numberToBytesBE } from '@noble/curves/abstract/utils';
import { sha256 } from '@noble/hashes/sha256';
import type { BbsCiphersuite } from '@digitalbazaar/bbs-signatures';
import type { Fr, G1, G2 } from 'mcl-wasm';

/**
 * ProofVerify of the IRTF CFRG BBS draft (the version `@digitalbazaar/bbs-signatures` v3
 * implements), ciphersuite BLS12-381-SHA-256, with the group arithmetic and the pairings in
 * WebAssembly: mcl-wasm (BSD-3-Clause), curve BLS12_381. This is the verifier the service runs;
 * the library's verifyProof (pure JavaScript on @noble/curves) is the reference it is tested
 * against, on the draft's published fixtures and on every proof the tests make.
 *
 * What costs the library its time, measured with --cpu-prof: the two multi-scalar sums (a fresh
 * window table per point), the generators (hash-to-curve, recomputed every call) and the pairings.
 * Here the sums are mcl's mulVec, the generators are computed once per count with @noble/curves'
 * hash-to-curve (exactly the draft's create_generators) and kept, and the check
 * e(Abar, W) · e(Bbar, -BP2) = 1 is two Miller loops and one final exponentiation.
 *
 * Points are validated as the draft requires: on the curve, in the prime-order subgroup, not the
 * identity (octets_to_point_E1/E2, subgroup_check_G1/G2); scalars 0 < s < r. Anything that does
 * not decode is a proof that does not hold: the function returns false, it does not throw.
 */

/** The arguments of ProofVerify, named as `@digitalbazaar/bbs-signatures` verifyProof names them. */
export interface BbsVerifyArgs {
  publicKey: Uint8Array;
  proof: Uint8Array;
  header: Uint8Array;
  presentationHeader: Uint8Array;
  disclosedMessages: Uint8Array[];
  disclosedMessageIndexes: number[];
  ciphersuite: BbsCiphersuite;
}

/** The draft's constants for BLS12-381-SHA-256 (section 7.2.2). */
const CIPHERSUITE_ID = 'BBS_BLS12381G1_XMD:SHA-256_SSWU_RO_';
const API_ID = utf8(`${CIPHERSUITE_ID}H2G_HM2S_`);
const HASH_TO_SCALAR_DST = concatBytes(API_ID, utf8('H2S_'));
const MAP_MESSAGE_DST = concatBytes(API_ID, utf8('MAP_MSG_TO_SCALAR_AS_HASH_'));
const SEED_DST = concatBytes(API_ID, utf8('SIG_GENERATOR_SEED_'));
const GENERATOR_DST = concatBytes(API_ID, utf8('SIG_GENERATOR_DST_'));
const GENERATOR_SEED = concatBytes(API_ID, utf8('MESSAGE_GENERATOR_SEED'));
const P1 = hex('a8ce256102840821a3e94ea9025e4662b205762f9776b3a766c872b948f1fd225e7c59698588e70d11406d161b4e28c9');
const EXPAND_LENGTH = 48;
const POINT_LENGTH = 48;
const PUBLIC_KEY_LENGTH = 96;
const SCALAR_LENGTH = 32;
const R = bls12_381.fields.Fr.ORDER;
/**
 * The most messages a proof may cover here (a `bbs` credential has 5). It bounds the generators
 * kept per thread and the sums handed to mcl, whose stack a sum of thousands of points overruns.
 */
export const MAX_MESSAGES = 256;

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function hex(text: string): Uint8Array {
  return Uint8Array.from(Buffer.from(text, 'hex'));
}

type Mcl = typeof import('mcl-wasm');

/**
 * mcl-wasm keeps its curve in module state, one curve per instance, and the Groth16 verifier has
 * the shared instance on BN_SNARK1. BBS needs BLS12_381, so it loads an instance of its own: the
 * package's files evaluated again, outside the module cache, which is then left as it was.
 */
function loadOwnMclInstance(): Mcl {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('mcl-wasm');
  // The shared instance first, completely: evaluated here for the first time, the package's files
  // would be left to a later `import 'mcl-wasm'` (Groth16's) half-loaded.
  require(entry);
  const directory = path.dirname(entry) + path.sep;
  const ownsFile = (file: string) => file.startsWith(directory);
  const shared = Object.entries(require.cache).filter(([file]) => ownsFile(file));
  for (const [file] of shared) delete require.cache[file];
  try {
    return require(entry) as Mcl;
  } finally {
    for (const file of Object.keys(require.cache)) if (ownsFile(file)) delete require.cache[file];
    for (const [file, module] of shared) require.cache[file] = module;
  }
}

interface BlsInstance {
  mcl: Mcl;
  p1: G1;
  /** -BP2, the negated G2 base point of the pairing check. */
  negBp2: G2;
  /** Q_1, H_1, H_2, …: create_generators' output, grown on demand up to the cap. */
  generators: G1[];
  /** The last `v` of create_generators' chain, to extend `generators` from. */
  generatorState: Uint8Array;
}

let instance: Promise<BlsInstance> | undefined;

/** Loads this verifier's mcl instance for BLS12_381, once per thread. */
export function initBlsMcl(): Promise<BlsInstance> {
  instance ??= (async () => {
    const mcl = loadOwnMclInstance();
    await mcl.init(mcl.BLS12_381);
    // Zcash/IETF point encoding, the one the draft and @noble/curves use; subgroup checks when parsing.
    mcl.setETHserialization(true);
    mcl.verifyOrderG1(true);
    mcl.verifyOrderG2(true);
    const p1 = new mcl.G1();
    p1.deserialize(P1);
    const bp2 = new mcl.G2();
    bp2.deserialize(bls12_381.G2.ProjectivePoint.BASE.toRawBytes(true));
    return {
      mcl,
      p1,
      negBp2: mcl.neg(bp2),
      generators: [],
      generatorState: expandMessage(GENERATOR_SEED, SEED_DST),
    };
  })().catch((error: unknown) => {
    instance = undefined;
    throw error;
  });
  return instance;
}

function expandMessage(message: Uint8Array, dst: Uint8Array): Uint8Array {
  return expand_message_xmd(message, dst, EXPAND_LENGTH, sha256);
}

/** hash_to_scalar of the draft: expand_message to 48 bytes, reduced mod r. */
function hashToScalar(message: Uint8Array, dst: Uint8Array): bigint {
  return bytesToNumberBE(expandMessage(message, dst)) % R;
}

/** The next generator of create_generators' chain, in the instance's cache. */
function nextGenerator(bls: BlsInstance): G1 {
  const i = bls.generators.length + 1;
  bls.generatorState = expandMessage(concatBytes(bls.generatorState, numberToBytesBE(i, 8)), SEED_DST);
  const point = bls12_381.G1.hashToCurve(bls.generatorState, { DST: GENERATOR_DST });
  const generator = new bls.mcl.G1();
  generator.deserialize(bls12_381.G1.ProjectivePoint.fromAffine(point.toAffine()).toRawBytes(true));
  return generator;
}

/** create_generators(count, api_id): Q_1 then H_1 … H_(count-1); count is at most MAX_MESSAGES + 1. */
function generators(bls: BlsInstance, count: number): G1[] {
  while (bls.generators.length < count) bls.generators.push(nextGenerator(bls));
  return bls.generators.slice(0, count);
}

function toFr(bls: BlsInstance, value: bigint): Fr {
  const scalar = new bls.mcl.Fr();
  scalar.setStr(value.toString(16), 16);
  return scalar;
}

/** octets_to_point_E1 with its checks, or undefined. */
function g1Point(bls: BlsInstance, octets: Uint8Array): G1 | undefined {
  const point = new bls.mcl.G1();
  try {
    point.deserialize(octets);
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) throw error; // a fault of the instance, not of the bytes
    return undefined; // not a canonical encoding of a point on the curve, or outside the subgroup
  }
  return point.isValid() && point.isValidOrder() && !point.isZero() ? point : undefined;
}

/** octets_to_pubkey: a G2 point in the subgroup, not the identity, or undefined. */
function publicKeyPoint(bls: BlsInstance, octets: Uint8Array): G2 | undefined {
  if (octets.length !== PUBLIC_KEY_LENGTH) return undefined;
  const point = new bls.mcl.G2();
  try {
    point.deserialize(octets);
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) throw error;
    return undefined;
  }
  return point.isValid() && point.isValidOrder() && !point.isZero() ? point : undefined;
}

interface DecodedProof {
  aBar: G1;
  bBar: G1;
  d: G1;
  eHat: bigint;
  r1Hat: bigint;
  r3Hat: bigint;
  commitments: bigint[];
  challenge: bigint;
}

/** octets_to_proof: three points, then at least four scalars, each 0 < s < r. */
function decodeProof(bls: BlsInstance, octets: Uint8Array): DecodedProof | undefined {
  const floor = 3 * POINT_LENGTH + 4 * SCALAR_LENGTH;
  if (octets.length < floor || (octets.length - floor) % SCALAR_LENGTH !== 0) return undefined;
  const points: G1[] = [];
  for (let i = 0; i < 3; i++) {
    const point = g1Point(bls, octets.subarray(i * POINT_LENGTH, (i + 1) * POINT_LENGTH));
    if (!point) return undefined;
    points.push(point);
  }
  const scalars: bigint[] = [];
  for (let index = 3 * POINT_LENGTH; index < octets.length; index += SCALAR_LENGTH) {
    const scalar = bytesToNumberBE(octets.subarray(index, index + SCALAR_LENGTH));
    if (scalar === 0n || scalar >= R) return undefined;
    scalars.push(scalar);
  }
  const [aBar, bBar, d] = points as [G1, G1, G1];
  const [eHat, r1Hat, r3Hat] = scalars as [bigint, bigint, bigint];
  return { aBar, bBar, d, eHat, r1Hat, r3Hat, commitments: scalars.slice(3, -1), challenge: scalars.at(-1)! };
}

function scalarOctets(value: bigint): Uint8Array {
  return numberToBytesBE(value, SCALAR_LENGTH);
}

/** calculate_domain: PK, L, the generators, api_id and the header, hashed to a scalar. */
function domain(publicKey: Uint8Array, gens: G1[], header: Uint8Array): bigint {
  const L = gens.length - 1;
  return hashToScalar(
    concatBytes(
      publicKey,
      numberToBytesBE(L, 8),
      ...gens.map((g) => g.serialize()),
      API_ID,
      numberToBytesBE(header.length, 8),
      header,
    ),
    HASH_TO_SCALAR_DST,
  );
}

/**
 * ProofVerify(PK, proof, header, ph, disclosed_messages, disclosed_indexes) for the
 * BLS12-381-SHA-256 ciphersuite: true when the proof holds, false for anything else (a proof or
 * key that does not decode, indexes out of range or repeated, a count that does not add up, more
 * than {@link MAX_MESSAGES} messages, an argument that is not bytes).
 */
export async function verifyBbsProofMcl(args: BbsVerifyArgs): Promise<boolean> {
  if (args.ciphersuite !== 'BLS12-381-SHA-256') {
    throw new Error(`bbs: the WebAssembly verifier implements BLS12-381-SHA-256, not ${args.ciphersuite}`);
  }
  const bls = await initBlsMcl();
  const { mcl } = bls;
  const indexes = args.disclosedMessageIndexes;
  const bytes = [args.publicKey, args.proof, args.header, args.presentationHeader, ...args.disclosedMessages];
  if (!bytes.every((b) => b instanceof Uint8Array)) return false;
  if (args.disclosedMessages.length !== indexes.length) return false;

  const w = publicKeyPoint(bls, args.publicKey);
  const proof = decodeProof(bls, args.proof);
  if (!w || !proof) return false;

  // ProofVerifyInit: L messages, R of them disclosed, U committed; each index once, within L.
  const U = proof.commitments.length;
  const L = indexes.length + U;
  if (L > MAX_MESSAGES) return false;
  const disclosed = new Set(indexes);
  if (disclosed.size !== indexes.length || indexes.some((i) => !Number.isSafeInteger(i) || i < 0 || i >= L)) {
    return false;
  }
  const undisclosed = Array.from({ length: L }, (_, i) => i).filter((i) => !disclosed.has(i));
  const gens = generators(bls, L + 1);
  const [q1, ...h] = gens as [G1, ...G1[]];
  const messages = args.disclosedMessages.map((m) => hashToScalar(m, MAP_MESSAGE_DST));
  const dom = domain(args.publicKey, gens, args.header);
  const c = proof.challenge;

  // T1 = Bbar·c + Abar·e^ + D·r1^
  const t1 = mcl.mulVec(
    [proof.bBar, proof.aBar, proof.d],
    [c, proof.eHat, proof.r1Hat].map((s) => toFr(bls, s)),
  );
  // T2 = Bv·c + D·r3^ + Σ H_j·m^_j, where Bv = P1 + Q_1·domain + Σ H_i·msg_i: one sum of products.
  const t2 = mcl.mulVec(
    [bls.p1, q1, ...indexes.map((i) => h[i]!), proof.d, ...undisclosed.map((j) => h[j]!)],
    [c, (dom * c) % R, ...messages.map((m) => (m * c) % R), proof.r3Hat, ...proof.commitments].map((s) => toFr(bls, s)),
  );

  // ProofChallengeCalculate: (R, i1, msg_i1, …, Abar, Bbar, D, T1, T2, domain) || len(ph) || ph
  const challenge = hashToScalar(
    concatBytes(
      numberToBytesBE(indexes.length, 8),
      ...indexes.flatMap((i, k) => [numberToBytesBE(i, 8), scalarOctets(messages[k]!)]),
      proof.aBar.serialize(),
      proof.bBar.serialize(),
      proof.d.serialize(),
      t1.serialize(),
      t2.serialize(),
      scalarOctets(dom),
      numberToBytesBE(args.presentationHeader.length, 8),
      args.presentationHeader,
    ),
    HASH_TO_SCALAR_DST,
  );
  if (challenge !== c) return false;

  // e(Abar, W) · e(Bbar, -BP2) = 1: two Miller loops, one final exponentiation.
  const product = mcl.mul(mcl.millerLoop(proof.aBar, w), mcl.millerLoop(proof.bBar, bls.negBp2));
  return mcl.finalExp(product).isOne();
}
