import { decodeJsonSegment, isJsonObject } from './jose.ts';

/** A decoded JWS in compact form, with the exact signing input its signature covers. */
export interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: string;
  signature: string;
}

/** The parts of a compact SD-JWT (`<issuer JWT>~<disclosure>~…~<KB-JWT or empty>`). */
export interface CompactSdJwt {
  issuerJwt: DecodedJwt;
  /** Disclosures as sent: their digests are computed over these exact strings. */
  disclosures: string[];
  kbJwt?: DecodedJwt;
  /** Everything before the KB-JWT, trailing `~` included: the input of `sd_hash`. */
  sdHashInput: string;
}

/** Far above any real student credential; bounds the work done on hostile input. */
export const MAX_PRESENTATION_LENGTH = 64 * 1024;

/** Decodes a compact JWS whose header and payload are JSON objects; undefined otherwise. */
export function decodeJwt(text: string): DecodedJwt | undefined {
  const segments = text.split('.');
  if (segments.length !== 3) return undefined;
  const [headerPart, payloadPart, signature] = segments as [string, string, string];
  const header = decodeJsonSegment(headerPart);
  const payload = decodeJsonSegment(payloadPart);
  if (!isJsonObject(header) || !isJsonObject(payload)) return undefined;
  return { header, payload, signingInput: `${headerPart}.${payloadPart}`, signature };
}

/**
 * Splits and decodes a compact SD-JWT. Undefined when it is not one: no `~` at all (a bare JWT),
 * an empty disclosure, or an issuer/KB JWT that does not decode.
 */
export function parseCompactSdJwt(text: string): CompactSdJwt | undefined {
  if (text.length > MAX_PRESENTATION_LENGTH) return undefined;
  const parts = text.split('~');
  if (parts.length < 2) return undefined;
  const kbPart = parts[parts.length - 1]!;
  const disclosures = parts.slice(1, -1);
  if (disclosures.some((disclosure) => disclosure.length === 0)) return undefined;
  const issuerJwt = decodeJwt(parts[0]!);
  if (!issuerJwt) return undefined;
  const kbJwt = kbPart === '' ? undefined : decodeJwt(kbPart);
  if (kbPart !== '' && !kbJwt) return undefined;
  return { issuerJwt, disclosures, kbJwt, sdHashInput: text.slice(0, text.length - kbPart.length) };
}
