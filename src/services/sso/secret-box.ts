import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Secrets the service must use again (an OpenID Connect client secret is sent to the provider's
 * token endpoint, so it cannot be hashed like an API key) are sealed at rest with AES-256-GCM
 * under IDP_SECRETS_KEY, bound to the row they belong to (the associated data): a database dump
 * holds no usable secret, and a sealed value copied to another row does not open.
 * Format: `v1.` + base64url(12-byte IV ‖ ciphertext ‖ 16-byte tag).
 */
const VERSION = 'v1.';

export function sealSecret(key: Buffer, secret: string, boundTo: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return VERSION + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** The secret, or undefined when the value was not sealed under `key` for `boundTo`. */
export function openSecret(key: Buffer, sealed: string, boundTo: string): string | undefined {
  if (!sealed.startsWith(VERSION)) return undefined;
  const raw = Buffer.from(sealed.slice(VERSION.length), 'base64url');
  if (raw.length < 12 + 16) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
