import { randomBytes } from 'node:crypto';
import type { PresentationBuilder, PresentationRequest, SandboxStudent } from '../types.ts';
import { issueSandboxCredential, presentCredential } from './credential.ts';
import { base64urlEncode, decodeJsonSegment } from './jose.ts';

function encodeDisclosure(item: unknown[]): string {
  return base64urlEncode(JSON.stringify(item));
}

/** The disclosure with its value changed: is_active_student flipped, any other value rewritten. */
function alterDisclosure(encoded: string): string | undefined {
  const item = decodeJsonSegment(encoded);
  if (!Array.isArray(item) || item.length !== 3) return undefined;
  const [salt, name, value] = item;
  return encodeDisclosure([salt, name, typeof value === 'boolean' ? !value : `${String(value)}-tampered`]);
}

/**
 * Alters a disclosed value of a compact SD-JWT so that its digest no longer matches `_sd`: the
 * is_active_student disclosure if it is there, else the first one, else a forged
 * is_active_student disclosure is added. The verifier answers `invalid_disclosure`.
 */
function tamper(presentation: unknown): unknown {
  if (typeof presentation !== 'string' || !presentation.includes('~')) throw new Error('not an sd-jwt-vc presentation');
  const parts = presentation.split('~');
  const disclosureIndexes = parts.map((_, index) => index).slice(1, -1);
  const target =
    disclosureIndexes.find((index) => {
      const item = decodeJsonSegment(parts[index]!);
      return Array.isArray(item) && item[1] === 'is_active_student';
    }) ?? disclosureIndexes[0];
  const altered = target === undefined ? undefined : alterDisclosure(parts[target]!);
  if (target !== undefined && altered !== undefined) {
    parts[target] = altered;
  } else {
    parts.splice(
      parts.length - 1,
      0,
      encodeDisclosure([randomBytes(16).toString('base64url'), 'is_active_student', true]),
    );
  }
  return parts.join('~');
}

/**
 * Holder side of `sd-jwt-vc`: issues the student's sandbox credential (at `request.now`) and
 * presents it disclosing exactly `request.disclose`, bound to the session by a KB-JWT.
 */
export const sdJwtVcBuilder: PresentationBuilder = {
  format: 'sd-jwt-vc',
  async present(student: SandboxStudent, request: PresentationRequest): Promise<unknown> {
    const credential = await issueSandboxCredential(student, request.now);
    return presentCredential(credential, student.holderSeed, request);
  },
  tamper,
};
