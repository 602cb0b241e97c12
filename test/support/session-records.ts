import { systemClock } from '../../src/domain/clock.ts';
import { newId } from '../../src/domain/ids.ts';
import type { Session } from '../../src/domain/session.ts';

/**
 * A new pending sandbox session of `orgId`'s application `appId`, as the store holds one, for
 * tests that write sessions without the API; `fields` replace the defaults.
 */
export function sessionRecord(orgId: string, appId: string, fields: Partial<Session> = {}): Session {
  const id = fields.id ?? newId('session', systemClock);
  const now = new Date().toISOString();
  return {
    id,
    appId,
    orgId,
    environment: 'sandbox',
    status: 'pending',
    challengeNonce: `nonce_${id}`,
    purpose: 'Test',
    requiredClaims: ['is_active_student'],
    metadata: null,
    clientReference: null,
    failedAttempts: 0,
    result: null,
    expiresAt: now,
    createdAt: now,
    updatedAt: now,
    consentedAt: null,
    completedAt: null,
    redactedAt: null,
    returnUrl: null,
    ...fields,
  };
}
