import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REJECTION_REASONS } from '../../src/proofs/types.ts';
import {
  apiErrorOf,
  rejectedMessage,
  SESSION_REFUSALS,
  type NotAccepted,
  type Rejected,
  type SessionRefusal,
} from '../../src/services/judgement.ts';
import { oauthErrorOf } from '../../src/services/openid4vp/answer-errors.ts';
import { loginRefusalOf } from '../../src/services/sso/complete.ts';

// An answer that completes nothing is a value (services/judgement.ts) that each channel maps to
// its own wire format: the wallet protocol (the API's envelope), OpenID4VP (OAuth's error
// response) and a university login (the refusal page and its X-Matricula-Rejection-Reason
// header). No database: the mappings are pure; the routes' suites check the same on the wire.

interface Wire {
  status: number;
  code: string;
  reason?: string;
  text: string;
}

const CHANNELS: Record<string, (outcome: NotAccepted) => Wire> = {
  matricula: (outcome) => {
    const error = apiErrorOf(outcome);
    return { status: error.status, code: error.code, reason: error.reason, text: error.message };
  },
  openid4vp: (outcome) => {
    const error = oauthErrorOf(outcome);
    return { status: error.status, code: error.error, reason: error.reason, text: error.description };
  },
  // The page has no code of its own: its reason header is what a caller reads.
  saml: (outcome) => {
    const refused = loginRefusalOf(outcome);
    return { status: refused.status, code: 'page', reason: refused.reason, text: refused.message };
  },
};

/** The wire code and status of a rejection on each channel, whatever the reason (docs/sessions.md, docs/openid4vp.md, docs/university-login.md). */
const REJECTION_WIRE = {
  matricula: { status: 400, code: 'presentation_rejected' },
  openid4vp: { status: 400, code: 'invalid_request' },
  saml: { status: 400, code: 'page' },
};

/** A refusal (nothing counted) on each channel. */
const REFUSAL_WIRE: Record<SessionRefusal, Record<string, { status: number; code: string; reason?: string }>> = {
  expired: {
    matricula: { status: 410, code: 'session_expired' },
    openid4vp: { status: 400, code: 'invalid_request' },
    saml: { status: 410, code: 'page', reason: 'session_expired' },
  },
  not_open: {
    matricula: { status: 409, code: 'invalid_state' },
    openid4vp: { status: 400, code: 'invalid_request' },
    saml: { status: 409, code: 'page', reason: 'invalid_state' },
  },
  method_not_allowed: {
    matricula: { status: 403, code: 'forbidden' },
    openid4vp: { status: 400, code: 'invalid_request' },
    saml: { status: 403, code: 'page', reason: 'forbidden' },
  },
};

const rejection = (reason: Rejected['reason'], attemptsLeft: number): Rejected => ({
  kind: 'rejected',
  reason,
  message: 'key binding JWT aud is not this service',
  detail: 'for the operator only',
  attemptsLeft,
});

test('every rejection reason maps to the same wire code on each channel, with its reason and the same words', () => {
  for (const [channel, toWire] of Object.entries(CHANNELS)) {
    const codes = new Set<string>();
    for (const reason of REJECTION_REASONS) {
      for (const attemptsLeft of [4, 1, 0]) {
        const outcome = rejection(reason, attemptsLeft);
        const wire = toWire(outcome);
        codes.add(`${wire.status} ${wire.code}`);
        assert.deepEqual(
          { status: wire.status, code: wire.code, reason: wire.reason },
          { ...REJECTION_WIRE[channel as keyof typeof REJECTION_WIRE], reason },
          `${channel}, ${reason}`,
        );
        assert.equal(wire.text, rejectedMessage(outcome), `${channel}, ${reason}: the words of every channel`);
        assert.doesNotMatch(wire.text, /operator only/, `${channel}: the detail is never sent`);
      }
    }
    assert.equal(codes.size, 1, `${channel}: one wire code for every reason`);
  }
});

test('the words of a rejection: the verifier sentence and the attempts left, or the last attempt', () => {
  assert.equal(
    rejectedMessage(rejection('audience_mismatch', 3)),
    'The presentation was rejected: key binding JWT aud is not this service. 3 attempts left.',
  );
  assert.equal(rejectedMessage(rejection('audience_mismatch', 1)).endsWith(' 1 attempt left.'), true);
  assert.equal(
    rejectedMessage(rejection('audience_mismatch', 0)),
    'The presentation was rejected: key binding JWT aud is not this service. That was the last attempt: the session is completed unverified (too_many_attempts).',
  );
});

test('every session refusal maps to its wire code on each channel; nothing is counted as a rejection', () => {
  for (const refusal of SESSION_REFUSALS) {
    const outcome: NotAccepted = { kind: 'refused', refusal, message: 'Cannot present to a completed session.' };
    for (const [channel, toWire] of Object.entries(CHANNELS)) {
      const wire = toWire(outcome);
      const expected = REFUSAL_WIRE[refusal][channel];
      assert.deepEqual(
        { status: wire.status, code: wire.code, reason: wire.reason },
        { reason: undefined, ...expected },
        `${channel}, ${refusal}`,
      );
      // A wallet speaking OpenID4VP knows an authorization request, not a session.
      const text: string =
        channel === 'openid4vp' && refusal === 'expired' ? 'The authorization request has expired.' : outcome.message;
      assert.equal(wire.text, text, `${channel}, ${refusal}`);
    }
  }
});
