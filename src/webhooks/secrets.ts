import { randomBytes } from 'node:crypto';

/**
 * Webhook signing secrets: `whsec_` + 43 base62 characters (256 random bits).
 *
 * Base62 rather than base64 so a secret is one "word": no `+ / - =` to break a double-click
 * selection, need quoting in a shell or an env file, or be mangled in a URL. The whole string,
 * prefix included, is the HMAC key (see signature.ts); it is never decoded.
 */

export const SIGNING_SECRET_PREFIX = 'whsec_';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 43 × log2(62) ≈ 256.03 bits. */
const SECRET_CHARACTERS = 43;
/** Largest multiple of 62 that fits in a byte: bytes at or above it are rejected so that every
 * character is uniformly distributed (a plain `% 62` would favour the first 8 characters). */
const UNBIASED_LIMIT = 248;

/** A fresh signing secret, e.g. `whsec_3kT…` (49 characters). */
export function newSigningSecret(): string {
  let out = '';
  while (out.length < SECRET_CHARACTERS) {
    for (const byte of randomBytes(64)) {
      if (byte >= UNBIASED_LIMIT) continue;
      out += BASE62[byte % 62];
      if (out.length === SECRET_CHARACTERS) break;
    }
  }
  return SIGNING_SECRET_PREFIX + out;
}

const SECRET_SHAPE = new RegExp(`^${SIGNING_SECRET_PREFIX}[0-9A-Za-z]{${SECRET_CHARACTERS}}$`);

/** True when `value` has the shape of a secret made by {@link newSigningSecret}. */
export function isSigningSecret(value: string): boolean {
  return SECRET_SHAPE.test(value);
}
