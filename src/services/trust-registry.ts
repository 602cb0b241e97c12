import { didWebUrl } from '../proofs/jwt-vc/dids.ts';
import type { Clock } from '../domain/clock.ts';
import {
  KEY_OF_FORMAT,
  type CredentialFormat,
  type Fetched,
  type IssuerKeys,
  type IssuerPublications,
  type TrustedIssuer,
  type TrustRegistry,
  type X509Policy,
} from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';
import { newId } from '../domain/ids.ts';
import { sandboxIssuers, validateIssuerInput } from '../proofs/issuer-definitions.ts';
import { issuerKeyProblem } from '../proofs/issuer-keys.ts';
import { anchorProblem } from '../proofs/x509.ts';
import type { Db } from '../store/db.ts';
import {
  deleteIssuer,
  findIssuer,
  insertIssuer,
  listIssuers,
  listIssuersPage,
  type StoredIssuer,
} from '../store/issuers.ts';
import type { Page, PageRequest } from '../store/pagination.ts';
import { checkTargetUrlShape } from '../outbound/ssrf.ts';

/** Told once per stored key the registry refuses to trust (the default writes a process warning). */
export type RegistryWarning = (message: string) => void;

const warnProcess: RegistryWarning = (message) => process.emitWarning(message, { code: 'MATRICULA_TRUST_REGISTRY' });

/**
 * The trust registry as stored: read on every verification, so a removal takes effect at once.
 * Every stored key is checked as `issuers add` checks it (issuer-keys.ts: a real point of its
 * kind, and no sandbox key for a live issuer): a row written before these checks existed, or by
 * hand, is skipped with a warning and never trusted. Checks are remembered per key, so the
 * BabyJubJub subgroup check (a scalar multiplication) runs once per key, not per verification.
 */
export function databaseTrustRegistry(
  db: Db,
  warn: RegistryWarning = warnProcess,
  publications?: IssuerPublications,
  x509?: X509Policy,
): TrustRegistry {
  const verdicts = new Map<string, string | undefined>();
  const verdict = (issuer: TrustedIssuer, what: string, value: unknown, check: () => string | undefined) => {
    const cacheKey = JSON.stringify([issuer.environment, what, value]);
    if (!verdicts.has(cacheKey)) {
      const problem = check();
      verdicts.set(cacheKey, problem);
      if (problem)
        warn(`trust registry: ${issuer.id} (${issuer.domain}, ${issuer.environment}) ${what} skipped: ${problem}`);
    }
    return verdicts.get(cacheKey) === undefined;
  };
  const keyUsable = (issuer: TrustedIssuer, field: keyof IssuerKeys) => {
    const key = issuer.keys[field];
    return (
      key !== undefined && verdict(issuer, `keys.${field}`, key, () => issuerKeyProblem(field, key, issuer.environment))
    );
  };
  /** The entry as trusted for `format`: unusable keys and anchors dropped; undefined when nothing is left. */
  const usable = (issuer: TrustedIssuer, format: CredentialFormat): TrustedIssuer | undefined => {
    const field = KEY_OF_FORMAT[format];
    // The JWT-secured formats also trust through X.509 anchors and issuer metadata (or did:web).
    if (format !== 'sd-jwt-vc' && format !== 'jwt-vc') return keyUsable(issuer, field) ? issuer : undefined;
    const anchors = (issuer.anchors ?? []).filter((pem, i) =>
      verdict(issuer, `anchors[${i}]`, pem, () => anchorProblem(pem)),
    );
    const keys = keyUsable(issuer, field) ? issuer.keys : { ...issuer.keys, sdJwtVc: undefined };
    if (keys.sdJwtVc === undefined && anchors.length === 0 && issuer.metadataIssuer === undefined) return undefined;
    return { ...issuer, keys, anchors };
  };
  return {
    async issuers(environment: Environment, format: CredentialFormat) {
      const all = await listIssuers(db, environment);
      return all.flatMap((issuer) => usable(issuer, format) ?? []);
    },
    publications,
    ...(x509 ? { x509 } : {}),
  };
}

/** Seeds the sandbox universities on first start; an existing entry (same domain) is left alone. */
export async function seedSandboxIssuers(db: Db, clock: Clock): Promise<number> {
  let added = 0;
  for (const issuer of sandboxIssuers()) {
    if (await insertIssuer(db, { ...issuer, id: newId('issuer', clock) }, clock.now().toISOString())) added++;
  }
  return added;
}

/** Why an issuer definition was not added: invalid (the problems) or a duplicate of domain and environment. */
export type AddIssuerOutcome =
  | { ok: true; issuer: StoredIssuer }
  | { ok: false; kind: 'invalid'; problems: string[] }
  | { ok: false; kind: 'duplicate'; message: string };

/** Adds a university to the trust registry (CLI `issuers add`, admin API); its credentials verify at once. */
export async function addIssuer(
  deps: { db: Db; clock: Clock; config?: { outboundAllowPrivateTargets: boolean } },
  input: unknown,
): Promise<AddIssuerOutcome> {
  const checked = validateIssuerInput(input);
  if (!checked.ok) return { ok: false, kind: 'invalid', problems: checked.problems };
  const metadataIssuer = checked.issuer.metadataIssuer;
  if (metadataIssuer !== undefined) {
    // The metadata will be fetched through the SSRF guard; say now if it would refuse the URL.
    const allowPrivateTargets = deps.config?.outboundAllowPrivateTargets ?? false;
    const url = metadataIssuer.startsWith('did:web:')
      ? (didWebUrl(metadataIssuer, { allowLoopbackHttp: allowPrivateTargets }) ?? metadataIssuer)
      : metadataIssuer;
    const shape = checkTargetUrlShape(url, { allowPrivateTargets });
    if (!shape.ok) return { ok: false, kind: 'invalid', problems: [`metadataIssuer: ${shape.message}`] };
  }
  const createdAt = deps.clock.now().toISOString();
  const issuer = { ...checked.issuer, id: newId('issuer', deps.clock) };
  if (!(await insertIssuer(deps.db, issuer, createdAt)))
    return {
      ok: false,
      kind: 'duplicate',
      message: `An issuer for ${issuer.domain} (${issuer.environment}) is already registered; remove it first to replace its keys.`,
    };
  return { ok: true, issuer: { ...issuer, createdAt } };
}

/** The whole registry, by environment and domain (CLI). */
export function registeredIssuers(deps: { db: Db }, environment?: Environment): Promise<StoredIssuer[]> {
  return listIssuers(deps.db, environment);
}

/** One page of the registry, newest first (admin API). */
export function registeredIssuersPage(
  deps: { db: Db },
  page: PageRequest,
  environment?: Environment,
): Promise<Page<StoredIssuer>> {
  return listIssuersPage(deps.db, page, environment);
}

export function registeredIssuer(deps: { db: Db }, id: string): Promise<StoredIssuer | undefined> {
  return findIssuer(deps.db, id);
}

/** Removes an issuer: credentials it signed stop verifying at once. The removed entry, or undefined. */
export async function removeIssuer(deps: { db: Db }, id: string): Promise<StoredIssuer | undefined> {
  const issuer = await findIssuer(deps.db, id);
  if (!issuer || !(await deleteIssuer(deps.db, id))) return undefined;
  return issuer;
}

export type RefreshOutcome =
  | { ok: true; issuer: StoredIssuer; keys: JsonWebKey[] }
  | { ok: false; kind: 'not_found' | 'no_metadata' | 'unreachable'; message: string };

/**
 * Fetches an issuer's metadata now (`matricula issuers refresh`, admin API), replacing this
 * process's cached copy; says which keys it publishes, or why they could not be had.
 */
export async function refreshIssuerMetadata(
  deps: { db: Db; publications: { refreshMetadata(issuer: string): Promise<Fetched<JsonWebKey[]>> } },
  id: string,
): Promise<RefreshOutcome> {
  const issuer = await findIssuer(deps.db, id);
  if (!issuer) return { ok: false, kind: 'not_found', message: `no issuer ${id}` };
  if (!issuer.metadataIssuer)
    return { ok: false, kind: 'no_metadata', message: `${id} is not trusted through issuer metadata` };
  const fetched = await deps.publications.refreshMetadata(issuer.metadataIssuer);
  if (!fetched.ok) return { ok: false, kind: 'unreachable', message: fetched.message };
  return { ok: true, issuer, keys: fetched.value };
}

export type { StoredIssuer } from '../store/issuers.ts';
