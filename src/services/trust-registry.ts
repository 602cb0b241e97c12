import type { Clock } from '../domain/clock.ts';
import { KEY_OF_FORMAT, type CredentialFormat, type TrustRegistry } from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';
import { newId } from '../domain/ids.ts';
import { sandboxIssuers, validateIssuerInput } from '../proofs/issuer-definitions.ts';
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

/** The trust registry as stored: read on every verification, so a removal takes effect at once. */
export function databaseTrustRegistry(db: Db): TrustRegistry {
  return {
    async issuers(environment: Environment, format: CredentialFormat) {
      const all = await listIssuers(db, environment);
      return all.filter((issuer) => issuer.keys[KEY_OF_FORMAT[format]] !== undefined);
    },
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
export async function addIssuer(deps: { db: Db; clock: Clock }, input: unknown): Promise<AddIssuerOutcome> {
  const checked = validateIssuerInput(input);
  if (!checked.ok) return { ok: false, kind: 'invalid', problems: checked.problems };
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
