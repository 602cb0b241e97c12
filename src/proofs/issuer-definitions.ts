/** Issuer definitions: the sandbox universities' keys and the validation of an operator's issuer file. Pure. */
import { sandboxIssuerPublicKeys as bbsSandboxKeys } from './bbs/index.ts';
import { sandboxIssuerPublicKeys as babyJubJubSandboxKeys } from './groth16/sandbox-issuers.ts';
import { issuerKeyProblem } from './issuer-keys.ts';
import { SANDBOX_UNIVERSITIES } from './sandbox-universities.ts';
import { anchorProblem } from './x509.ts';
import { didWebUrl } from './jwt-vc/dids.ts';
import { sandboxIssuerPublicKeys as sdJwtSandboxKeys } from './sd-jwt-vc/index.ts';
import type { IssuerKeys, TrustedIssuer } from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';

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

export type IssuerInput = Omit<TrustedIssuer, 'id'>;

/** Validates an issuer definition (CLI `issuers add`); returns the problems, none when valid. */
export function validateIssuerInput(
  value: unknown,
): { ok: true; issuer: IssuerInput } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const v = (value ?? {}) as Record<string, unknown>;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, problems: ['the file must hold a JSON object'] };
  const allowed = new Set(['name', 'domain', 'country', 'environment', 'keys', 'anchors', 'metadataIssuer']);
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
  const anchors = anchorsOf(v.anchors, problems);
  const metadataIssuer = metadataIssuerOf(v.metadataIssuer, problems);
  if (v.keys !== undefined && (typeof v.keys !== 'object' || v.keys === null || Array.isArray(v.keys)))
    problems.push('keys: an object with sdJwtVc, bbs and/or babyJubJub is required');
  else {
    for (const field of Object.keys(keys))
      if (!['sdJwtVc', 'bbs', 'babyJubJub'].includes(field)) problems.push(`keys: unknown format key "${field}"`);
    if (Object.keys(keys).length === 0 && !anchors?.length && metadataIssuer === undefined)
      problems.push('keys: at least one public key is required (or X.509 anchors, or an issuer metadata URL)');
    // Every key must be a real key of its kind; a live issuer's must not be a published sandbox key.
    const environment = v.environment === 'live' ? 'live' : 'sandbox';
    for (const field of ['sdJwtVc', 'bbs', 'babyJubJub'] as const) {
      if (keys[field] === undefined) continue;
      const problem = issuerKeyProblem(field, keys[field], environment);
      if (problem) problems.push(`keys.${field}: ${problem}`);
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
      ...(anchors?.length ? { anchors } : {}),
      ...(metadataIssuer !== undefined ? { metadataIssuer } : {}),
    },
  };
}

/** Most anchors one entry may name: a university has one or two CAs, not a trust store. */
export const MAX_ANCHORS = 10;

function anchorsOf(value: unknown, problems: string[]): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > MAX_ANCHORS) {
    problems.push(`anchors: an array of at most ${MAX_ANCHORS} PEM certificates is required`);
    return undefined;
  }
  value.forEach((pem, index) => {
    const problem = anchorProblem(pem);
    if (problem) problems.push(`anchors[${index}]: ${problem}`);
  });
  return value as string[];
}

/**
 * An SD-JWT VC issuer identifier: an https URL without query or fragment (http is refused at
 * fetch time unless private targets are allowed, for local development); or a `did:web` DID.
 */
function metadataIssuerOf(value: unknown, problems: string[]): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && value.startsWith('did:')) {
    if (value.startsWith('did:web:') && didWebUrl(value) !== undefined) return value;
    problems.push('metadataIssuer: a DID must be a did:web, e.g. "did:web:uni.example.edu"');
    return undefined;
  }
  let url: URL | undefined;
  try {
    url = typeof value === 'string' && value.length <= 2048 ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash || url.username) {
    problems.push('metadataIssuer: the issuer identifier URL is required, e.g. "https://uni.example.edu"');
    return undefined;
  }
  return value as string;
}
