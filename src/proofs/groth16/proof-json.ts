/**
 * The shape of Groth16 points in snarkjs JSON (decimal strings, projective with z = 1), shared by
 * both pairing back ends so that they refuse exactly the same inputs as `malformed`. Whether the
 * coordinates are a point of the group is each back end's check (`invalid_point`).
 */

/** BN254's base field order p: every coordinate is an integer in [0, p). */
export const BN254_P = 21888242871839275222246405745257275088696311157297823662689037894645226208583n;

/** Why a proof JSON could not be decoded: its shape, or points that are not valid group elements. */
export type ProofDecodeError = 'malformed' | 'invalid_point';

/** Affine G1 coordinates (x, y), each canonical and < p. */
export type G1Coordinates = readonly [x: bigint, y: bigint];

/** Affine G2 coordinates, x = x0 + x1·u and y = y0 + y1·u, each part canonical and < p. */
export type G2Coordinates = readonly [x0: bigint, x1: bigint, y0: bigint, y1: bigint];

function parseCoordinate(value: unknown): bigint | undefined {
  if (typeof value !== 'string' || !/^(0|[1-9][0-9]{0,77})$/.test(value)) return undefined;
  const n = BigInt(value);
  return n < BN254_P ? n : undefined;
}

function isStringTuple(value: unknown, length: number): value is string[] {
  return Array.isArray(value) && value.length === length && value.every((v) => typeof v === 'string');
}

/** Reads `[x, y, "1"]`; undefined for any other shape. */
export function g1Coordinates(value: unknown): G1Coordinates | undefined {
  if (!isStringTuple(value, 3) || value[2] !== '1') return undefined;
  const x = parseCoordinate(value[0]);
  const y = parseCoordinate(value[1]);
  return x === undefined || y === undefined ? undefined : [x, y];
}

/** Reads `[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]` (snarkjs puts the real part first); undefined otherwise. */
export function g2Coordinates(value: unknown): G2Coordinates | undefined {
  if (!Array.isArray(value) || value.length !== 3) return undefined;
  if (!value.every((c) => isStringTuple(c, 2))) return undefined;
  const [xs, ys, zs] = value as string[][];
  if (zs[0] !== '1' || zs[1] !== '0') return undefined;
  const coords = [...xs, ...ys].map(parseCoordinate);
  if (coords.some((c) => c === undefined)) return undefined;
  const [x0, x1, y0, y1] = coords as bigint[];
  return [x0, x1, y0, y1];
}

/** A back end's point constructors: the point, or `invalid_point` if the coordinates are not a group element. */
export interface PointDecoders<G1 extends object, G2 extends object> {
  g1(coordinates: G1Coordinates): G1 | 'invalid_point';
  g2(coordinates: G2Coordinates): G2 | 'invalid_point';
}

/**
 * Decodes a proof `{pi_a, pi_b, pi_c}` point by point, in that order: the first point that fails
 * decides the error, whichever back end decodes.
 */
export function decodeProofWith<G1 extends object, G2 extends object>(
  json: unknown,
  decoders: PointDecoders<G1, G2>,
): { a: G1; b: G2; c: G1 } | ProofDecodeError {
  if (typeof json !== 'object' || json === null) return 'malformed';
  const { pi_a, pi_b, pi_c } = json as Record<string, unknown>;
  const g1 = (value: unknown): G1 | ProofDecodeError => {
    const coordinates = g1Coordinates(value);
    return coordinates ? decoders.g1(coordinates) : 'malformed';
  };
  const a = g1(pi_a);
  if (typeof a === 'string') return a;
  const coordinatesOfB = g2Coordinates(pi_b);
  if (!coordinatesOfB) return 'malformed';
  const b = decoders.g2(coordinatesOfB);
  if (typeof b === 'string') return b;
  const c = g1(pi_c);
  if (typeof c === 'string') return c;
  return { a, b, c };
}
