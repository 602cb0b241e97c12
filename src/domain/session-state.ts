import { timestampMs } from './clock.ts';
/** The states of a verification session (docs/sessions.md, States). */
export type SessionStatus = 'pending' | 'consented' | 'completed' | 'expired' | 'cancelled' | 'declined';

/**
 * The session workflow, in one table: the states each state may move to. A student consents
 * (or declines) before presenting; open sessions end by completion, expiry or cancellation.
 */
export const SESSION_TRANSITIONS: Readonly<Record<SessionStatus, readonly SessionStatus[]>> = {
  pending: ['consented', 'declined', 'expired', 'cancelled'],
  consented: ['completed', 'declined', 'expired', 'cancelled'],
  completed: [],
  expired: [],
  cancelled: [],
  declined: [],
};

export const OPEN_STATUSES: readonly SessionStatus[] = ['pending', 'consented'];
export const SESSION_STATUSES = Object.keys(SESSION_TRANSITIONS) as SessionStatus[];

export function canTransition(from: SessionStatus, to: SessionStatus): boolean {
  return SESSION_TRANSITIONS[from].includes(to);
}

/** The states from which `to` can be reached: the guard of a conditional UPDATE. */
export function statusesLeadingTo(to: SessionStatus): SessionStatus[] {
  return SESSION_STATUSES.filter((from) => canTransition(from, to));
}

export function isTerminal(status: SessionStatus): boolean {
  return SESSION_TRANSITIONS[status].length === 0;
}

/** Expiry is exact on read: an open session past its expiry reads as expired before the sweeper persists it. */
export function effectiveStatus(status: SessionStatus, expiresAt: string, now: Date): SessionStatus {
  return OPEN_STATUSES.includes(status) && now.getTime() >= timestampMs(expiresAt) ? 'expired' : status;
}

/** Rejected presentations allowed before the session completes unverified. */
export const MAX_FAILED_ATTEMPTS = 5;

export const SESSION_TTL = { minSeconds: 30, maxSeconds: 900, defaultSeconds: 300 } as const;
