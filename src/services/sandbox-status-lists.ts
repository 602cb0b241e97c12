import type { Clock } from '../domain/clock.ts';
import type { Fetched } from '../domain/credentials.ts';
import { sandboxUniversity } from '../proofs/sandbox-universities.ts';
import {
  isFixedSandboxIndex,
  SANDBOX_STATUS_LIST_SIZE,
  sandboxStatusListPath,
  sandboxStatusListToken,
  STATUS_REVOKED,
  STATUS_SUSPENDED,
  STATUS_VALID,
} from '../proofs/sd-jwt-vc/sandbox-status-list.ts';
import type { Db } from '../store/db.ts';
import { sandboxStatuses, setSandboxStatus } from '../store/sandbox-statuses.ts';

/**
 * The status lists of the sandbox universities, published by Matricula at
 * `{BASE_URL}/sandbox/status-lists/{domain}` (docs/trust.md, "Sandbox"). The wallet simulator puts
 * that URI in its credentials; the verifier reads these lists straight from the database (no
 * request to itself) and checks them exactly like any other: signature, `sub`, `exp`, the bits.
 */

interface Deps {
  db: Db;
  clock: Clock;
  config: { baseUrl: string };
}

export function sandboxStatusListUri(baseUrl: string, domain: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${sandboxStatusListPath(domain)}`;
}

/** The signed status list token of a sandbox university, or undefined for another domain. */
export async function sandboxStatusList(deps: Deps, domain: string): Promise<string | undefined> {
  if (!sandboxUniversity(domain)) return undefined;
  const overrides = await sandboxStatuses(deps.db, domain);
  return sandboxStatusListToken(domain, sandboxStatusListUri(deps.config.baseUrl, domain), overrides, deps.clock.now());
}

/** For the verifier: a URI of one of our own sandbox lists, read locally; undefined for any other URI. */
export function localSandboxStatusLists(deps: Deps): (uri: string) => Promise<Fetched<string> | undefined> {
  const prefix = sandboxStatusListUri(deps.config.baseUrl, '');
  return async (uri) => {
    if (!uri.startsWith(prefix)) return undefined;
    const token = await sandboxStatusList(deps, uri.slice(prefix.length));
    return token ? { ok: true, value: token } : { ok: false, message: `${uri} is not a sandbox status list` };
  };
}

export const SANDBOX_STATUS_WORDS = { valid: STATUS_VALID, revoked: STATUS_REVOKED, suspended: STATUS_SUSPENDED };
export type SandboxStatusWord = keyof typeof SANDBOX_STATUS_WORDS;

export type SetStatusOutcome = { ok: true } | { ok: false; message: string };

/** Sets the status of one index of a sandbox university's list (`matricula sandbox revoke`). */
export async function setSandboxCredentialStatus(
  deps: { db: Db; clock: Clock },
  input: { domain: string; idx: number; status: SandboxStatusWord },
): Promise<SetStatusOutcome> {
  if (!sandboxUniversity(input.domain)) return { ok: false, message: `${input.domain} is not a sandbox university` };
  if (!Number.isSafeInteger(input.idx) || input.idx < 0 || input.idx >= SANDBOX_STATUS_LIST_SIZE)
    return { ok: false, message: `the index must be a whole number from 0 to ${SANDBOX_STATUS_LIST_SIZE - 1}` };
  if (isFixedSandboxIndex(input.idx))
    return { ok: false, message: 'indexes 0–31 have fixed statuses (0–15 revoked, 16–31 suspended)' };
  await setSandboxStatus(
    deps.db,
    { domain: input.domain, idx: input.idx, status: SANDBOX_STATUS_WORDS[input.status] },
    deps.clock.now().toISOString(),
  );
  return { ok: true };
}
