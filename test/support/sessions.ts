import type { ClaimName } from '../../src/domain/claims.ts';
import { BUILDERS } from './builders.ts';
import type { SandboxStudent } from '../../src/proofs/types.ts';
import type { CredentialFormat } from '../../src/domain/credentials.ts';
import type { Harness, Tenant } from './harness.ts';

/** Shortcuts over the real endpoints for session tests. */
export interface CreatedSession {
  sessionId: string;
  challengeNonce: string;
  qrPayload: string;
  verificationUrl: string;
  openid4vpUri: string;
  expiresAt: string;
  status: string;
}

export async function createSession(
  h: Harness,
  tenant: Tenant,
  body: Record<string, unknown> = {},
): Promise<CreatedSession> {
  const res = await h.app.inject({
    method: 'POST',
    url: '/verification/v1/sessions',
    headers: tenant.auth,
    payload: {
      appId: tenant.appId,
      purpose: 'Student discount at checkout',
      requiredClaims: ['is_active_student', 'university_domain'],
      ...body,
    },
  });
  if (res.statusCode !== 201) throw new Error(`create session: ${res.statusCode} ${res.body}`);
  return res.json().data;
}

export function consent(
  h: Harness,
  session: CreatedSession,
  decision: 'approved' | 'declined' = 'approved',
  nonce = session.challengeNonce,
) {
  return h.app.inject({
    method: 'POST',
    url: `/verification/v1/sessions/${session.sessionId}/consent`,
    payload: { nonce, decision },
  });
}

export const ACTIVE_STUDENT: SandboxStudent = {
  university: 'sandbox-state.example',
  active: true,
  academicLevel: 'undergraduate',
  validUntil: '2027-09-30T00:00:00.000Z',
  holderSeed: 'test-student-1',
};

/** A presentation built by the format's sandbox builder, bound as the request says unless overridden. */
export async function buildPresentation(
  h: Harness,
  format: CredentialFormat,
  options: { nonce: string; audience?: string; disclose?: ClaimName[]; student?: Partial<SandboxStudent> },
): Promise<unknown> {
  const builder = format === 'jwt-vc' ? undefined : BUILDERS[format];
  if (!builder) throw new Error(`no builder for ${format}`);
  return builder.present(
    { ...ACTIVE_STUDENT, ...options.student },
    {
      nonce: options.nonce,
      audience: options.audience ?? h.config.baseUrl,
      now: h.clock.now(),
      disclose: options.disclose ?? ['is_active_student', 'university_domain', 'valid_until'],
    },
  );
}

export function submit(
  h: Harness,
  session: CreatedSession,
  format: CredentialFormat,
  presentation: unknown,
  nonce = session.challengeNonce,
) {
  return h.app.inject({
    method: 'POST',
    url: `/verification/v1/sessions/${session.sessionId}/presentation`,
    payload: { nonce, format, presentation },
  });
}

export async function getSession(h: Harness, tenant: Tenant, sessionId: string) {
  const res = await h.app.inject({
    method: 'GET',
    url: `/verification/v1/sessions/${sessionId}`,
    headers: tenant.auth,
  });
  return res;
}
