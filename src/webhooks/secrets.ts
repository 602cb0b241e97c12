import { randomBytes } from 'node:crypto';

/**
 * Webhook signing secrets: `whsec_` + 44 base62 characters (about 262 random bits).
 *
 * Base62 so a secret is one "word": no `+ / - =` to break a double-click selection, need quoting
 * in a shell or an env file, or be mangled in a URL. Base62 characters are also base64
 * characters, and 44 of them are exactly 33 bytes of standard base64 with no padding and no
 * spare bits, so the same string is a canonical Standard Webhooks secret (`whsec_` + base64 of
 * the key) that every base64 decoder (Node, Python, Go) reads the same way. One string, two keys
 * (see signature.ts, and the receiver side in packages/sdk/src/webhooks.ts):
 *
 *   X-Service-Signature (Stripe's scheme)   key = the whole string, `whsec_` included, as UTF-8
 *   webhook-signature (Standard Webhooks)   key = base64-decode(the string after `whsec_`)
 *
 * Secrets made before Standard Webhooks support have 43 characters (256 bits): still valid. As
 * unpadded base64 they decode (Node, `standardwebhooks`, `svix`) to 32 bytes, the last
 * character's 2 spare bits dropped; strict decoders need one `=` appended.
 */

export const SIGNING_SECRET_PREFIX = 'whsec_';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 44 × log2(62) ≈ 262 bits; 44 × 6 bits = 33 bytes of base64 exactly. */
const SECRET_CHARACTERS = 44;
/** The length of secrets made before Standard Webhooks support (43 × log2(62) ≈ 256 bits). */
const LEGACY_SECRET_CHARACTERS = 43;
/** Largest multiple of 62 that fits in a byte: bytes at or above it are rejected so that every
 * character is uniformly distributed (a plain `% 62` would favour the first 8 characters). */
const UNBIASED_LIMIT = 248;

/** A fresh signing secret, e.g. `whsec_3kT…` (50 characters). */
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

const SECRET_SHAPE = new RegExp(
  `^${SIGNING_SECRET_PREFIX}[0-9A-Za-z]{${LEGACY_SECRET_CHARACTERS},${SECRET_CHARACTERS}}$`,
);

/** True when `value` has the shape of a secret made by {@link newSigningSecret}, now or before. */
export function isSigningSecret(value: string): boolean {
  return SECRET_SHAPE.test(value);
}
