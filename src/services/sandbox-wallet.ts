import { randomBytes } from 'node:crypto';
import type { AcademicLevel } from '../domain/claims.ts';
import { OPEN_STATUSES } from '../domain/session-state.ts';
import { ApiError, forbidden, invalidRequest, invalidState } from '../errors.ts';
import type { HolderBuilders } from '../proofs/builders.ts';
import type { SandboxStudent } from '../proofs/types.ts';
import type { CredentialFormat } from '../domain/credentials.ts';
import type { ServiceDeps } from './deps.ts';
import { presentationRequest } from './wallet.ts';
import { sandboxStatusListUri } from './sandbox-status-lists.ts';
import { sandboxStatusIndex } from '../proofs/sd-jwt-vc/sandbox-status-list.ts';

/**
 * The sandbox web wallet's server side. A real wallet holds its credential and builds its
 * presentation on the phone; the sandbox wallet's "phone" is a browser tab, and the holder-side
 * builders run here, so this service builds the presentation and hands it back. The browser then
 * consents and submits through the same public endpoints a real wallet uses. Sandbox only: the
 * sandbox issuers' keys are public, and a live session must never be answered with them.
 */

export type SandboxPresentationRequest = Awaited<ReturnType<typeof presentationRequest>>;

/** The student the tester picks. */
export interface SandboxStudentChoice {
  /** Domain of a sandbox university. */
  university: string;
  active: boolean;
  academicLevel: AcademicLevel;
  /** A credential whose validity ended yesterday. */
  expired: boolean;
}

export interface SandboxPresentationInput {
  sessionId: string;
  nonce: string;
  format: CredentialFormat;
  student: SandboxStudentChoice;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function midnightUtc(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString();
}

/** The credential of the chosen student: valid for a year from today, or expired since yesterday. */
export function sandboxStudent(choice: SandboxStudentChoice, now: Date): SandboxStudent {
  return {
    university: choice.university,
    active: choice.active,
    academicLevel: choice.academicLevel,
    validUntil: choice.expired ? midnightUtc(now.getTime() - DAY_MS) : midnightUtc(now.getTime() + 365 * DAY_MS),
    // A fresh holder for every presentation: the sandbox wallet keeps no state between answers.
    holderSeed: `sandbox-wallet:${randomBytes(16).toString('hex')}`,
  };
}

/** The formats a session accepts, split by whether this installation can build them. */
export interface SandboxFormats {
  /** The formats the sandbox wallet offers. */
  offered: CredentialFormat[];
  /** Accepted formats it cannot build here, each with why (a missing devDependency). */
  unavailable: Array<{ format: CredentialFormat; reason: string }>;
}

export function sandboxFormats(accepted: readonly CredentialFormat[], holder: HolderBuilders): SandboxFormats {
  const formats: SandboxFormats = { offered: [], unavailable: [] };
  for (const format of accepted) {
    const entry = holder[format];
    if (entry.available) formats.offered.push(format);
    else formats.unavailable.push({ format, reason: entry.reason });
  }
  return formats;
}

/**
 * The presentation request of a sandbox session, as a wallet reads it. Unknown session or wrong
 * nonce: 404; expired: 410; a live session: 403, whatever its state.
 */
export async function sandboxPresentationRequest(
  deps: ServiceDeps,
  sessionId: string,
  nonce: string,
): Promise<SandboxPresentationRequest> {
  const request = await presentationRequest(deps, sessionId, nonce);
  if (request.environment !== 'sandbox') {
    throw forbidden(
      'The sandbox wallet answers sandbox sessions only. This is a live session: answer it with a real student wallet.',
    );
  }
  return request;
}

/**
 * Builds the chosen student's presentation for an open sandbox session, disclosing what it asks
 * for, with the builders this installation has.
 */
export async function buildSandboxPresentation(
  deps: ServiceDeps,
  input: SandboxPresentationInput,
  holder: HolderBuilders,
): Promise<{ format: CredentialFormat; presentation: unknown }> {
  const request = await sandboxPresentationRequest(deps, input.sessionId, input.nonce);
  if (!OPEN_STATUSES.includes(request.status))
    throw invalidState(`The session is ${request.status}: there is nothing left to answer.`);
  const entry = holder[input.format];
  const { offered } = sandboxFormats(request.acceptedFormats, holder);
  if (!offered.includes(input.format) || !entry.available) {
    const why = entry.available ? '' : ` ${entry.reason}`;
    const instead = offered.length > 0 ? ` It answers in ${offered.join(', ')}.` : '';
    throw invalidRequest(`The sandbox wallet cannot answer in ${input.format}.${why}${instead}`, 'format');
  }
  const now = deps.clock.now();
  const student = {
    ...sandboxStudent(input.student, now),
    // Like any real wallet's credential, the sandbox one names its entry in its university's status list.
    status: {
      uri: sandboxStatusListUri(deps.config.baseUrl, input.student.university),
      idx: sandboxStatusIndex('valid'),
    },
  };
  const presentation = await entry.builder.present(student, {
    nonce: request.nonce,
    audience: request.audience,
    now,
    disclose: request.requiredClaims,
  });
  return { format: input.format, presentation };
}

/**
 * At most `max` presentations are built at once per process: proofs cost CPU (a Groth16 proof
 * takes seconds) and this endpoint needs no API key, so beyond that the caller is told to retry.
 */
export function buildLimiter(max: number) {
  let running = 0;
  return async function run<T>(work: () => Promise<T>): Promise<T> {
    if (running >= max)
      throw new ApiError(
        'rate_limited',
        'The sandbox wallet is busy building other presentations. Try again in a moment.',
      );
    running++;
    try {
      return await work();
    } finally {
      running--;
    }
  };
}
