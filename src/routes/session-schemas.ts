import { Type, type TSchema } from '@sinclair/typebox';
import { CLAIM_CATALOGUE } from '../domain/claims.ts';
import { SESSION_STATUSES } from '../domain/session-state.ts';
import { Environment, IsoTimestamp } from '../http/schemas.ts';
import { CREDENTIAL_FORMATS } from '../domain/credentials.ts';

export const SessionStatusSchema = Type.Union(SESSION_STATUSES.map((s) => Type.Literal(s)));
export const FormatSchema = Type.Union(
  CREDENTIAL_FORMATS.map((f) => Type.Literal(f)),
  { description: 'Credential format' },
);
export const ClaimNameSchema = Type.String({
  minLength: 1,
  maxLength: 64,
  description: `One of ${CLAIM_CATALOGUE.join(', ')}`,
});

export const University = Type.Object({
  name: Type.String(),
  domain: Type.String(),
  country: Type.String({ description: 'ISO 3166-1 alpha-2' }),
});

const nullable = <T extends TSchema>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

/**
 * Spec 6.3: `is_active_student`, `academic_level` and `valid_until` are always present;
 * `university_domain` when the business asked for it. Data minimization: a claim the business did
 * not ask for, or that the format proves without revealing, is null.
 */
export const ReportedClaims = Type.Object(
  {
    is_active_student: nullable(Type.Boolean(), 'null only when no presentation qualified'),
    university_domain: Type.Optional(
      nullable(Type.String(), 'Present when requested; null if the student did not disclose it'),
    ),
    academic_level: nullable(Type.String(), 'null when not requested or not disclosed'),
    valid_until: nullable(
      Type.String(),
      'null when not requested, or when the format proves it lies in the future without revealing it (groth16)',
    ),
  },
  {
    description: 'The claims of the result: the spec 6.3 keys always, each null when not requested or not revealed',
  },
);

export const SessionResultSchema = Type.Object({
  verified: Type.Boolean(),
  format: Type.Union([FormatSchema, Type.Null()]),
  university: Type.Union([University, Type.Null()]),
  claims: ReportedClaims,
  failureReason: Type.Union([Type.String(), Type.Null()], {
    description: 'student_inactive, credential_expired, claim_not_disclosed or too_many_attempts; null when verified',
  }),
});

/** Spec 2.1 fields first, then the state of the session. */
export const SessionSchema = Type.Object({
  sessionId: Type.String({ description: 'Prefix sess_' }),
  status: SessionStatusSchema,
  challengeNonce: Type.String({ description: 'Prefix nonce_' }),
  qrPayload: Type.String(),
  verificationUrl: Type.String(),
  expiresAt: IsoTimestamp,
  appId: Type.String(),
  environment: Environment,
  purpose: Type.String(),
  requiredClaims: Type.Array(Type.String()),
  metadata: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()]),
  clientReference: Type.Union([Type.String(), Type.Null()]),
  createdAt: IsoTimestamp,
  consentedAt: Type.Union([IsoTimestamp, Type.Null()]),
  completedAt: Type.Union([IsoTimestamp, Type.Null()]),
  result: Type.Optional(SessionResultSchema),
});

/** Spec 2.1 exactly: what creation returns. */
export const CreatedSessionSchema = Type.Object({
  sessionId: Type.String({ description: 'Prefix sess_' }),
  status: Type.Literal('pending'),
  challengeNonce: Type.String({ description: 'Prefix nonce_' }),
  qrPayload: Type.String({ description: '{APP_SCHEME}://verify?session=<sessionId>&nonce=<challengeNonce>' }),
  verificationUrl: Type.String({ description: '{PORTAL_URL}/verify/<sessionId>' }),
  expiresAt: IsoTimestamp,
});
