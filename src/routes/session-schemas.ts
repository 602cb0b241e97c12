import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { CLAIM_CATALOGUE } from '../domain/claims.ts';
import { CREDENTIAL_FORMATS } from '../domain/credentials.ts';
import { ANSWER_METHODS, LOGIN_EVIDENCE_FORMATS } from '../domain/identity-providers.ts';
import { FAILURE_REASONS, RESULT_WARNING_CODES, WALLET_PROTOCOLS } from '../domain/session.ts';
import { SESSION_STATUSES, type SessionStatus } from '../domain/session-state.ts';
import { AcademicLevelEnum, ReportedClaimsSchema, UniversitySchema } from '../domain/schemas.ts';
import { Environment, IsoTimestamp, Ref, StringEnum } from '../http/schemas.ts';

export const SessionStatusEnum = StringEnum(SESSION_STATUSES, {
  $id: 'SessionStatus',
  description: 'pending → consented → completed; or declined, expired, cancelled',
});
export const SessionStatusSchema = Ref(SessionStatusEnum);

export const FormatEnum = StringEnum(CREDENTIAL_FORMATS, {
  $id: 'CredentialFormat',
  description:
    'Credential format: sd-jwt-vc (SD-JWT VC), jwt-vc (W3C Verifiable Credential secured as JWT, jwt_vc_json), bbs, groth16',
});
export const FormatSchema = Ref(FormatEnum);

export const LoginEvidenceFormatEnum = StringEnum(LOGIN_EVIDENCE_FORMATS, {
  $id: 'LoginEvidenceFormat',
  description: 'What a university login result rests on: a signed SAML 2.0 assertion or an OpenID Connect ID token',
});

export const AnswerMethodEnum = StringEnum(ANSWER_METHODS, {
  $id: 'AnswerMethod',
  description: "A channel that may answer a session: wallet (Matricula's protocol, OpenID4VP) or university_login",
});

export const ClaimNameEnum = StringEnum(CLAIM_CATALOGUE, {
  $id: 'ClaimName',
  description: 'A claim of the catalogue',
});
export const ClaimNameSchema = Ref(ClaimNameEnum);

export const FailureReasonEnum = StringEnum(FAILURE_REASONS, {
  $id: 'FailureReason',
  description: 'Why a completed session is not verified',
});

// Defined in domain/schemas.ts: the event data (domain/events.ts) shows them too.
export { AcademicLevelEnum, ReportedClaimsSchema, UniversitySchema };
export const University = Ref(UniversitySchema);
export const ReportedClaims = Ref(ReportedClaimsSchema);

export const ResultWarningCodeEnum = StringEnum(RESULT_WARNING_CODES, {
  $id: 'ResultWarningCode',
  description:
    "A check the result skipped by the operator's policy (credential_status_unknown: STATUS_LIST_POLICY=warn)",
});

/** Present only when a check was skipped by policy; absent otherwise. */
export const ResultWarnings = Type.Array(
  Type.Object({ code: Ref(ResultWarningCodeEnum), message: Type.String() }, { additionalProperties: false }),
  {
    description:
      "Checks skipped by the operator's policy: credential_status_unknown when the revocation status could not be determined and STATUS_LIST_POLICY is warn. Absent when every check ran.",
  },
);

export const SessionResultSchema = Type.Object(
  {
    verified: Type.Boolean(),
    protocol: StringEnum(WALLET_PROTOCOLS, {
      description:
        'What answered: matricula (the wallet endpoints), openid4vp (OpenID4VP 1.0), saml or oidc (a university login, docs/university-login.md)',
    }),
    format: Type.Union([FormatSchema, Ref(LoginEvidenceFormatEnum), Type.Null()]),
    university: Type.Union([University, Type.Null()]),
    claims: ReportedClaims,
    failureReason: Type.Union([Ref(FailureReasonEnum), Type.Null()], { description: 'null when verified' }),
    failureMessage: Type.Union([Type.String(), Type.Null()], {
      description:
        'What was wrong, in words an integrator can act on (which claim, which check, for too_many_attempts the last rejection); null when verified',
    }),
    warnings: Type.Optional(ResultWarnings),
  },
  { $id: 'SessionResult', description: 'The outcome of a completed session' },
);

const RequiredClaims = Type.Array(ClaimNameSchema);

const Openid4vpUri = Type.String({
  description:
    'The same request for a standard OpenID4VP 1.0 wallet (EUDI and others): {OPENID4VP_SCHEME}://?client_id=…&request_uri=… (signed request by reference), or the whole request by value with the redirect_uri client identifier prefix',
});

/** The creation fields first (docs/sessions.md), then the state of the session. */
const sessionFields = {
  sessionId: Type.String({ description: 'Prefix sess_' }),
  challengeNonce: Type.String({ description: 'Prefix nonce_' }),
  qrPayload: Type.String(),
  verificationUrl: Type.String(),
  openid4vpUri: Openid4vpUri,
  expiresAt: IsoTimestamp,
  appId: Type.String(),
  environment: Environment,
  purpose: Type.String(),
  requiredClaims: RequiredClaims,
  metadata: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()]),
  clientReference: Type.Union([Type.String(), Type.Null()]),
  returnUrl: Type.Union([Type.String(), Type.Null()], {
    description:
      'Where the portal sends the student once the session ends, with ?session=<sessionId> (never the result); null without one, and once redacted',
  }),
  createdAt: IsoTimestamp,
  consentedAt: Type.Union([IsoTimestamp, Type.Null()]),
  completedAt: Type.Union([IsoTimestamp, Type.Null()]),
  redacted: Type.Boolean({
    description:
      "true once the session was redacted (POST …/redact, or RESULT_RETENTION_DAYS after it ended): metadata, clientReference, and the result's university, claim values and failureMessage are null",
  }),
  redactedAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'When it was redacted; null while kept' }),
};

const OPEN_OR_ENDED = SESSION_STATUSES.filter((s) => s !== 'completed');

/** A session that has not completed: no result yet, or ever. */
export const SessionWithoutResultSchema = Type.Object(
  { ...sessionFields, status: StringEnum(OPEN_OR_ENDED) },
  { $id: 'SessionWithoutResult', description: 'A session that did not complete: it has no result' },
);

/** A completed session, always with its result. */
export const CompletedSessionSchema = Type.Object(
  { ...sessionFields, status: Type.Literal('completed'), result: Ref(SessionResultSchema) },
  { $id: 'CompletedSession', description: 'A completed session and its result' },
);

/** The session: `result` is present exactly when `status` is `completed` (one of two shapes, by status). */
export const SessionUnion = Type.Unsafe<
  Omit<Static<typeof CompletedSessionSchema>, 'status' | 'result'> & {
    status: SessionStatus;
    result?: Static<typeof SessionResultSchema>;
  }
>({
  $id: 'Session',
  description: 'A verification session; result is present exactly when status is completed',
  oneOf: [{ $ref: 'SessionWithoutResult' }, { $ref: 'CompletedSession' }],
});
export const SessionSchema = Ref(SessionUnion);

/** What creation returns, exactly (docs/sessions.md). */
export const CreatedSessionSchema = Type.Object(
  {
    sessionId: Type.String({ description: 'Prefix sess_' }),
    status: Type.Literal('pending'),
    challengeNonce: Type.String({ description: 'Prefix nonce_' }),
    qrPayload: Type.String({ description: '{APP_SCHEME}://verify?session=<sessionId>&nonce=<challengeNonce>' }),
    verificationUrl: Type.String({ description: '{PORTAL_URL}/verify/<sessionId>' }),
    openid4vpUri: Openid4vpUri,
    expiresAt: IsoTimestamp,
  },
  { $id: 'CreatedSession', description: 'The session as created, with its openid4vpUri' },
);

export const SESSION_COMPONENTS: TSchema[] = [
  SessionStatusEnum,
  FormatEnum,
  LoginEvidenceFormatEnum,
  AnswerMethodEnum,
  ClaimNameEnum,
  AcademicLevelEnum,
  FailureReasonEnum,
  ResultWarningCodeEnum,
  UniversitySchema,
  ReportedClaimsSchema,
  SessionResultSchema,
  SessionWithoutResultSchema,
  CompletedSessionSchema,
  SessionUnion,
  CreatedSessionSchema,
];
