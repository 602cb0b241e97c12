import { Type, type SchemaOptions, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { ACADEMIC_LEVELS, type AcademicLevel } from './claims.ts';
import { ENVIRONMENTS } from './environment.ts';

/**
 * The TypeBox schemas of domain values that more than one edge shows: the routes' responses (and
 * so the OpenAPI document) and the webhook bodies (domain/events.ts). They live here, below both,
 * so that one definition types the producer and describes the wire.
 */

/**
 * A closed list of strings as one `enum` (what generators turn into a union type), not an anyOf
 * of single-value consts. Validation is the same: the value must be one of `values`.
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: SchemaOptions = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: 'string', enum: [...values] });
}

/**
 * A reference to a named component schema (one with an `$id`, registered once by the app): the
 * OpenAPI document shows `$ref: '#/components/schemas/<$id>'` instead of a copy.
 */
export function Ref<T extends TSchema>(schema: T, options: SchemaOptions = {}): TUnsafe<Static<T>> {
  if (typeof schema.$id !== 'string') throw new Error('Ref: the schema has no $id');
  return Type.Unsafe<Static<T>>({ ...options, $ref: schema.$id });
}

export const IsoTimestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds' });

export const EnvironmentSchema = StringEnum(ENVIRONMENTS, {
  $id: 'Environment',
  description: 'sandbox (sk_test_ keys, sandbox universities) or live (sk_live_ keys)',
});

export const UniversitySchema = Type.Object(
  {
    name: Type.String(),
    domain: Type.String(),
    country: Type.String({ description: 'ISO 3166-1 alpha-2' }),
  },
  { $id: 'University' },
);

const nullable = <T extends TSchema>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

/**
 * Always reported (docs/sessions.md): `is_active_student`, `academic_level` and `valid_until` are always present;
 * `university_domain` when the business asked for it. Data minimization: a claim the business did
 * not ask for, or that the format proves without revealing, is null.
 */
/** The catalogue's academic levels (domain/claims.ts). */
export const AcademicLevelEnum = StringEnum(Object.keys(ACADEMIC_LEVELS) as AcademicLevel[], {
  $id: 'AcademicLevel',
});

export const ReportedClaimsSchema = Type.Object(
  {
    is_active_student: nullable(Type.Boolean(), 'null only when no presentation qualified'),
    university_domain: Type.Optional(
      nullable(Type.String(), 'Present when requested; null if the student did not disclose it'),
    ),
    academic_level: nullable(Ref(AcademicLevelEnum), 'null when not requested or not disclosed'),
    valid_until: nullable(
      Type.String(),
      'Always asked of the wallet, so reported whenever the format reveals it (sd-jwt-vc, bbs); null when not disclosed, or when the format proves it lies in the future without revealing it (groth16)',
    ),
  },
  {
    $id: 'ReportedClaims',
    description:
      'The claims of the result: the three always-reported keys, each null when not requested or not revealed',
  },
);
