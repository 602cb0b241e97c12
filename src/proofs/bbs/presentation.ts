import { bls12_381 } from '@noble/curves/bls12-381';
import type { ClaimName } from '../../domain/claims.ts';
import { isPresentationTime } from '../freshness.ts';
import {
  BBS_MESSAGE_COUNT,
  HOLDER_SECRET_INDEX,
  MAX_CLAIM_VALUE_LENGTH,
  claimAtIndex,
  typedClaimValue,
} from './credential.ts';

/**
 * The JSON value a holder submits as a `bbs` presentation:
 * `{issuer: "<domain>", now: <unix seconds>, proof: "<base64url BBS proof>", disclosed: {"<index>": "<value>", …}}`.
 * `disclosed` maps the message index of each disclosed claim to its value as signed (see
 * credential.ts); everything else stays hidden in the proof. `now` is the time the proof was
 * made, bound into the presentation header and checked against the service clock.
 */
export interface BbsPresentation {
  issuer: string;
  now: number;
  proof: string;
  disclosed: Record<string, string>;
}

/** One disclosed message: its index, the catalogue claim there, and the signed value. */
export interface DisclosedMessage {
  index: number;
  claim: ClaimName;
  value: string;
}

/** A presentation whose shape is right; its cryptography is still unchecked. */
export interface ParsedBbsPresentation {
  issuer: string;
  /** Unix seconds, as bound into the presentation header. */
  now: number;
  proof: Uint8Array;
  /** Ascending by index, the order BBS expects. */
  disclosed: DisclosedMessage[];
}

export type ParseOutcome = { ok: true; presentation: ParsedBbsPresentation } | { ok: false; message: string };

/** Size of a proof that leaves `undisclosed` messages hidden: 3 G1 points, 4 + U scalars (draft §3.6.3). */
export function proofLength(undisclosed: number): number {
  return 3 * POINT_LENGTH + (4 + undisclosed) * SCALAR_LENGTH;
}

const POINT_LENGTH = 48;
const SCALAR_LENGTH = 32;
/** The order r of the BLS12-381 scalar field. */
const SCALAR_ORDER = bls12_381.fields.Fr.ORDER;

/**
 * Why the scalars of a proof are not all in [1, r), or undefined. A proof is
 * `Abar || Bbar || D || e^ || r1^ || r3^ || m^_j1 … m^_jU || challenge` (draft §octets_to_proof):
 * three compressed G1 points, then 32-byte big-endian scalars, each of which must be neither 0
 * nor ≥ r. The library's own check compares its bigint with the number 0 (`s_j === 0`, always
 * false), so a zero scalar reaches the verification equation: we refuse it here, before the
 * library sees it.
 */
export function proofScalarProblem(proof: Uint8Array): string | undefined {
  const names = (count: number) => [
    'e^',
    'r1^',
    'r3^',
    ...Array.from({ length: count - 4 }, (_, i) => `m^${i}`),
    'challenge',
  ];
  const count = (proof.length - 3 * POINT_LENGTH) / SCALAR_LENGTH;
  if (!Number.isInteger(count) || count < 4) return 'the proof does not hold three points and at least four scalars';
  const label = names(count);
  for (let i = 0; i < count; i++) {
    const start = 3 * POINT_LENGTH + i * SCALAR_LENGTH;
    const scalar = BigInt(`0x${Buffer.from(proof.subarray(start, start + SCALAR_LENGTH)).toString('hex')}`);
    if (scalar === 0n) return `proof scalar ${label[i]} is zero`;
    if (scalar >= SCALAR_ORDER) return `proof scalar ${label[i]} is not below the group order`;
  }
  return undefined;
}

const MAX_DOMAIN_LENGTH = 253;
const INDEX_KEY = /^(0|[1-9][0-9]*)$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(message: string): ParseOutcome {
  return { ok: false, message };
}

function parseDisclosed(value: unknown): DisclosedMessage[] | string {
  if (!isPlainObject(value)) return '`disclosed` must be an object of message index to value';
  const messages: DisclosedMessage[] = [];
  for (const [key, claimValue] of Object.entries(value)) {
    if (!INDEX_KEY.test(key)) return `\`disclosed\` key "${key.slice(0, 20)}" is not a message index`;
    const index = Number(key);
    if (index === HOLDER_SECRET_INDEX) return `message ${index} is the holder secret, which is never disclosed`;
    const claim = claimAtIndex(index);
    if (claim === undefined) return `message index ${index} is not a claim of the credential`;
    if (typeof claimValue !== 'string' || claimValue.length > MAX_CLAIM_VALUE_LENGTH) {
      return `disclosed ${claim} must be a string of at most ${MAX_CLAIM_VALUE_LENGTH} characters`;
    }
    if (typedClaimValue(claim, claimValue) === undefined) return `disclosed ${claim} has an impossible value`;
    messages.push({ index, claim, value: claimValue });
  }
  return messages.sort((a, b) => a.index - b.index);
}

function parseProof(value: unknown, disclosedCount: number): Uint8Array | string {
  if (typeof value !== 'string' || !BASE64URL.test(value)) return '`proof` must be a base64url string';
  const bytes = Buffer.from(value, 'base64url');
  // Non-canonical encodings (stray trailing bits) would give several strings for one proof.
  if (bytes.toString('base64url') !== value) return '`proof` is not canonical base64url';
  const expected = proofLength(BBS_MESSAGE_COUNT - disclosedCount);
  if (bytes.length !== expected) {
    return `\`proof\` of a credential disclosing ${disclosedCount} messages is ${expected} bytes, not ${bytes.length}`;
  }
  return new Uint8Array(bytes);
}

/** Checks the shape of a submitted `bbs` presentation; never throws. */
export function parseBbsPresentation(value: unknown): ParseOutcome {
  if (!isPlainObject(value)) return fail('a bbs presentation is an object {issuer, now, proof, disclosed}');
  const unknownKey = Object.keys(value).find((key) => !['issuer', 'now', 'proof', 'disclosed'].includes(key));
  if (unknownKey !== undefined) return fail(`unexpected field "${unknownKey.slice(0, 40)}"`);
  const { issuer } = value;
  if (typeof issuer !== 'string' || issuer.length === 0 || issuer.length > MAX_DOMAIN_LENGTH) {
    return fail('`issuer` must be the issuing university domain');
  }
  const { now } = value;
  if (!isPresentationTime(now)) return fail('`now` must be the unix time (seconds) the proof was made');
  const disclosed = parseDisclosed(value.disclosed);
  if (typeof disclosed === 'string') return fail(disclosed);
  const proof = parseProof(value.proof, disclosed.length);
  if (typeof proof === 'string') return fail(proof);
  return { ok: true, presentation: { issuer, now, proof, disclosed } };
}
