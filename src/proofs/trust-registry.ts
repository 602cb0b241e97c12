import type { Clock } from '../domain/clock.ts';
import { newId } from '../domain/ids.ts';
import type { Db } from '../store/db.ts';
import { insertIssuer, listIssuers } from '../store/issuers.ts';
import { decodeBbsPublicKey, sandboxIssuerPublicKeys as bbsSandboxKeys } from './bbs/index.ts';
import { sandboxIssuerPublicKeys as babyJubJubSandboxKeys } from './groth16/sandbox-issuers.ts';
import { parseFieldElement } from './groth16/fields.ts';
import { SANDBOX_UNIVERSITIES } from './sandbox-universities.ts';
import { sandboxIssuerPublicKeys as sdJwtSandboxKeys } from './sd-jwt-vc/index.ts';
import type { CredentialFormat, Environment, IssuerKeys, TrustedIssuer, TrustRegistry } from './types.ts';

const KEY_OF_FORMAT: Record<CredentialFormat, keyof IssuerKeys> = {
  'sd-jwt-vc': 'sdJwtVc',
  bbs: 'bbs',
  groth16: 'babyJubJub',
};

/** The trust registry as stored: read on every verification, so a removal takes effect at once. */
export function databaseTrustRegistry(db: Db): TrustRegistry {
  return {
    async issuers(environment: Environment, format: CredentialFormat) {
      const all = await listIssuers(db, environment);
      return all.filter((issuer) => issuer.keys[KEY_OF_FORMAT[format]] !== undefined);
    },
  };
}

/** The sandbox universities with their keys in every format (derived from the published seeds). */
export function sandboxIssuers(): Array<Omit<TrustedIssuer, 'id'>> {
  const sdJwt = sdJwtSandboxKeys();
  const bbs = bbsSandboxKeys();
  const babyJubJub = babyJubJubSandboxKeys();
  return SANDBOX_UNIVERSITIES.map((u) => ({
    name: u.name,
    domain: u.domain,
    country: u.country,
    environment: 'sandbox' as const,
    keys: { sdJwtVc: sdJwt[u.domain], bbs: bbs[u.domain], babyJubJub: babyJubJub[u.domain] },
  }));
}

/** Seeds the sandbox universities on first start; an existing entry (same domain) is left alone. */
export async function seedSandboxIssuers(db: Db, clock: Clock): Promise<number> {
  let added = 0;
  for (const issuer of sandboxIssuers()) {
    if (await insertIssuer(db, { ...issuer, id: newId('issuer', clock) }, clock.now().toISOString())) added++;
  }
  return added;
}

export type IssuerInput = Omit<TrustedIssuer, 'id'>;

/** Validates an issuer definition (CLI `issuers add`); returns the problems, none when valid. */
export function validateIssuerInput(
  value: unknown,
): { ok: true; issuer: IssuerInput } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const v = (value ?? {}) as Record<string, unknown>;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, problems: ['the file must hold a JSON object'] };
  const allowed = new Set(['name', 'domain', 'country', 'environment', 'keys']);
  for (const field of Object.keys(v)) if (!allowed.has(field)) problems.push(`unknown field "${field}"`);
  if (typeof v.name !== 'string' || v.name.trim() === '') problems.push('name: a non-empty string is required');
  if (
    typeof v.domain !== 'string' ||
    !/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(v.domain)
  )
    problems.push('domain: a lowercase DNS name is required, e.g. "uni.example.edu"');
  if (typeof v.country !== 'string' || !/^[A-Z]{2}$/.test(v.country))
    problems.push('country: a two-letter ISO 3166 code is required, e.g. "ES"');
  if (v.environment !== 'sandbox' && v.environment !== 'live')
    problems.push('environment: "sandbox" or "live" is required');
  const keys = (v.keys ?? {}) as Record<string, unknown>;
  if (typeof v.keys !== 'object' || v.keys === null || Array.isArray(v.keys))
    problems.push('keys: an object with sdJwtVc, bbs and/or babyJubJub is required');
  else {
    for (const field of Object.keys(keys))
      if (!['sdJwtVc', 'bbs', 'babyJubJub'].includes(field)) problems.push(`keys: unknown format key "${field}"`);
    if (Object.keys(keys).length === 0) problems.push('keys: at least one public key is required');
    if (keys.sdJwtVc !== undefined) problems.push(...jwkProblems(keys.sdJwtVc));
    if (keys.bbs !== undefined && (typeof keys.bbs !== 'string' || !decodeBbsPublicKey(keys.bbs)))
      problems.push('keys.bbs: base64url of a 96-byte BLS12-381 G2 public key is required');
    if (keys.babyJubJub !== undefined) {
      const point = keys.babyJubJub as Record<string, unknown>;
      if (
        typeof point !== 'object' ||
        point === null ||
        parseFieldElement(point.x) === undefined ||
        parseFieldElement(point.y) === undefined
      ) {
        problems.push('keys.babyJubJub: {x, y} as decimal strings of field elements is required');
      }
    }
  }
  if (problems.length) return { ok: false, problems };
  return {
    ok: true,
    issuer: {
      name: String(v.name).trim(),
      domain: v.domain as string,
      country: v.country as string,
      environment: v.environment as Environment,
      keys: keys as IssuerKeys,
    },
  };
}

function jwkProblems(jwk: unknown): string[] {
  const k = (jwk ?? {}) as Record<string, unknown>;
  if (typeof jwk !== 'object' || jwk === null) return ['keys.sdJwtVc: a public JWK is required'];
  if ('d' in k) return ['keys.sdJwtVc: this JWK holds a private key; give the public key only'];
  const p256 = k.kty === 'EC' && k.crv === 'P-256' && typeof k.x === 'string' && typeof k.y === 'string';
  const ed25519 = k.kty === 'OKP' && k.crv === 'Ed25519' && typeof k.x === 'string';
  return p256 || ed25519 ? [] : ['keys.sdJwtVc: an EC P-256 (ES256) or OKP Ed25519 (EdDSA) public JWK is required'];
}
