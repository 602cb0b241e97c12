import { createHash } from 'node:crypto';
import { decodeJsonSegment, isJsonObject } from './jose.ts';

/**
 * Rebuilds the disclosed payload from the issuer-signed one and the disclosures, following
 * RFC 9901 §7.1 strictly. The @sd-jwt libraries silently drop disclosures that no digest refers
 * to; here such a disclosure (a forged or altered one) rejects the whole presentation, as do
 * duplicate digests, claim names that clash with signed ones, and malformed disclosures.
 */

export type DisclosureOutcome = { ok: true; claims: Record<string, unknown> } | { ok: false; message: string };

interface Disclosure {
  salt: string;
  /** Absent for an array-element disclosure. */
  name?: string;
  value: unknown;
}

class DisclosureError extends Error {}

// Our credentials are flat; the bound keeps recursion on hostile input far from the stack limit.
const MAX_DEPTH = 16;

/** base64url(SHA-256(ASCII of the disclosure as sent)): the only digest algorithm we accept. */
export function disclosureDigest(encoded: string): string {
  return createHash('sha256').update(encoded, 'ascii').digest('base64url');
}

function decodeDisclosure(encoded: string): Disclosure {
  const item = decodeJsonSegment(encoded);
  if (!Array.isArray(item) || typeof item[0] !== 'string')
    throw new DisclosureError('a disclosure is not a [salt, (name,) value] array');
  if (item.length === 2) return { salt: item[0], value: item[1] };
  if (item.length === 3 && typeof item[1] === 'string') return { salt: item[0], name: item[1], value: item[2] };
  throw new DisclosureError('a disclosure is not a [salt, (name,) value] array');
}

// `out[key] = value` with key "__proto__" would replace the prototype instead of adding a claim.
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

class Unpacker {
  private readonly byDigest = new Map<string, Disclosure>();
  private readonly seenDigests = new Set<string>();

  constructor(encodedDisclosures: readonly string[]) {
    for (const encoded of encodedDisclosures) {
      const digest = disclosureDigest(encoded);
      if (this.byDigest.has(digest)) throw new DisclosureError('the same disclosure is sent twice');
      this.byDigest.set(digest, decodeDisclosure(encoded));
    }
  }

  /** Every disclosure sent must have been reached from the signed payload. */
  assertAllUsed(): void {
    for (const digest of this.byDigest.keys()) {
      if (!this.seenDigests.has(digest)) throw new DisclosureError('a disclosure matches no digest of the credential');
    }
  }

  /** Marks a digest as met, returning its disclosure if one was sent (none: undisclosed or decoy). */
  private take(digest: unknown): Disclosure | undefined {
    if (typeof digest !== 'string') throw new DisclosureError('a digest is not a string');
    if (this.seenDigests.has(digest)) throw new DisclosureError('a digest appears more than once');
    this.seenDigests.add(digest);
    return this.byDigest.get(digest);
  }

  unpack(value: unknown, depth: number): unknown {
    if (depth > MAX_DEPTH) throw new DisclosureError('the credential is nested too deeply');
    if (Array.isArray(value)) return this.unpackArray(value, depth);
    if (isJsonObject(value)) return this.unpackObject(value, depth);
    return value;
  }

  private unpackArray(array: unknown[], depth: number): unknown[] {
    const out: unknown[] = [];
    for (const element of array) {
      if (isJsonObject(element) && Object.keys(element).length === 1 && Object.hasOwn(element, '...')) {
        const disclosure = this.take(element['...']);
        if (!disclosure) continue;
        if (disclosure.name !== undefined)
          throw new DisclosureError('an array element disclosure carries a claim name');
        out.push(this.unpack(disclosure.value, depth + 1));
      } else {
        out.push(this.unpack(element, depth + 1));
      }
    }
    return out;
  }

  private unpackObject(object: Record<string, unknown>, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(object)) {
      if (key !== '_sd') setOwn(out, key, this.unpack(child, depth + 1));
    }
    const digests = object._sd ?? [];
    if (!Array.isArray(digests)) throw new DisclosureError('_sd is not an array');
    for (const digest of digests) {
      const disclosure = this.take(digest);
      if (!disclosure) continue;
      const name = disclosure.name;
      if (name === undefined) throw new DisclosureError('an object property disclosure has no claim name');
      if (name === '_sd' || name === '...' || Object.hasOwn(out, name))
        throw new DisclosureError(`disclosed claim "${name}" clashes with the credential`);
      setOwn(out, name, this.unpack(disclosure.value, depth + 1));
    }
    return out;
  }
}

/** The payload with every disclosed claim in place and `_sd`/`_sd_alg` removed, or why not. */
export function resolveDisclosures(
  signedPayload: Record<string, unknown>,
  encodedDisclosures: readonly string[],
): DisclosureOutcome {
  try {
    const unpacker = new Unpacker(encodedDisclosures);
    const { _sd_alg: _alg, ...payload } = signedPayload;
    const claims = unpacker.unpack(payload, 0) as Record<string, unknown>;
    unpacker.assertAllUsed();
    return { ok: true, claims };
  } catch (error) {
    if (error instanceof DisclosureError) return { ok: false, message: error.message };
    throw error;
  }
}
