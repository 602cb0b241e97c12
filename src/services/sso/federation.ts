import { X509Certificate } from 'node:crypto';
import type { Clock } from '../../domain/clock.ts';
import type { Environment } from '../../domain/environment.ts';
import { newId } from '../../domain/ids.ts';
import { fetchPublished } from '../../outbound/fetch.ts';
import { checkTargetUrlShape, createGuardedDispatcher } from '../../outbound/ssrf.ts';
import type { Db } from '../../store/db.ts';
import {
  deleteFederation,
  dueFederations,
  findFederation,
  insertFederation,
  listFederations,
  updateFederationStatus,
  type IdentityFederation,
} from '../../store/identity-federations.ts';
import {
  deleteFederationEntries,
  federationEntries,
  upsertFederationEntries,
  type StoredIdentityProvider,
} from '../../store/identity-providers.ts';
import { countryFromDomain } from './registry.ts';
import type { AggregateOutcome, VerifiedAggregate } from './saml/aggregate.ts';
import { verifyAggregateInThread } from './saml/aggregate-thread.ts';

/**
 * Identity federations (`matricula idps add --federation-metadata`, /admin/v1/identity-federations):
 * a signed metadata aggregate whose identity providers become registry entries, kept in step with
 * it. A refresh (the `federation-refresh` job, or on demand) fetches the aggregate through the
 * outbound SSRF guard with the federation size and time limits, verifies it (saml/aggregate.ts),
 * and writes only what changed, in batches of {@link BATCH} rows with a turn of the event loop
 * between them, so requests keep being served and no long transaction holds the database. Each
 * entry changes atomically and keeps its id; the set converges within one refresh. An aggregate
 * that fails to verify changes nothing; one past its validUntil that cannot be refreshed has its
 * entries withdrawn, because nothing vouches for them any longer.
 */

export const BATCH = 250;
/** How soon a failed refresh is tried again. */
const RETRY_SECONDS = 600;
const MIN_REFRESH_SECONDS = 60;

type Deps = {
  db: Db;
  clock: Clock;
  config: {
    outboundAllowPrivateTargets: boolean;
    universityLogin: {
      federationMaxBytes: number;
      federationFetchTimeoutMs: number;
      federationRefreshMaxSeconds: number;
    };
  };
};

/** A federation as shown: its certificate's fingerprint rather than the PEM. */
export type FederationView = Omit<IdentityFederation, 'signingCertificate'> & {
  signingCertificateSha256: string;
};

export function federationView(f: IdentityFederation): FederationView {
  const { signingCertificate, ...rest } = f;
  let fingerprint = '';
  try {
    fingerprint = new X509Certificate(signingCertificate).fingerprint256;
  } catch {
    // stored only after it parsed once
  }
  return { ...rest, signingCertificateSha256: fingerprint };
}

/** What one load or refresh did to the registry. */
export interface SyncCounts {
  added: number;
  updated: number;
  removed: number;
  unchanged: number;
  /** Entities that are not usable IdPs, or already registered alone or by another federation. */
  skipped: number;
}

export interface AddFederationInput {
  environment?: Environment;
  name?: string;
  /** The aggregate (XML)… */
  metadata?: string;
  /** …or where to fetch it, and refresh it from. */
  metadataUrl?: string;
  /** PEM certificate the aggregate's signature must verify under (the federation's signing key). */
  signingCertificate: string;
  /** Country of entries whose metadata tells none (a national federation's). */
  country?: string;
}

export type FederationOutcome =
  | { ok: true; federation: FederationView; counts: SyncCounts; skipped: string[] }
  | { ok: false; kind: 'invalid'; problems: string[] };

const yieldToRequests = () => new Promise<void>((resolve) => setImmediate(resolve));

async function fetchAggregate(
  deps: Deps,
  url: string,
): Promise<{ ok: true; xml: string } | { ok: false; problem: string }> {
  const allowPrivateTargets = deps.config.outboundAllowPrivateTargets;
  const fetched = await fetchPublished(url, 'application/samlmetadata+xml, application/xml', {
    dispatcher: createGuardedDispatcher({ allowPrivateTargets }),
    allowPrivateTargets,
    clock: deps.clock,
    timeoutMs: deps.config.universityLogin.federationFetchTimeoutMs,
    maxBytes: deps.config.universityLogin.federationMaxBytes,
  });
  return fetched.ok ? { ok: true, xml: fetched.value.body } : { ok: false, problem: fetched.message };
}

function nextRefresh(deps: Deps, now: Date, aggregate: VerifiedAggregate, fromUrl: boolean): string | null {
  if (!fromUrl) return null;
  const max = deps.config.universityLogin.federationRefreshMaxSeconds;
  const seconds = Math.min(max, Math.max(MIN_REFRESH_SECONDS, aggregate.cacheDurationSeconds ?? max));
  // Never later than the aggregate's end: a fresh one must be fetched before this one expires.
  return new Date(Math.min(now.getTime() + seconds * 1000, Date.parse(aggregate.validUntil))).toISOString();
}

/** Brings the federation's entries in step with a verified aggregate. */
async function syncEntries(
  deps: Deps,
  federation: Pick<IdentityFederation, 'id' | 'environment'>,
  aggregate: VerifiedAggregate,
  defaultCountry: string | undefined,
): Promise<{ counts: SyncCounts; skipped: string[] }> {
  const existing = new Map((await federationEntries(deps.db, federation.id)).map((p) => [p.entityId, p]));
  const skipped = [...aggregate.skipped];
  const now = deps.clock.now().toISOString();
  const writes: StoredIdentityProvider[] = [];
  const seen = new Set<string>();
  let unchanged = 0;
  let added = 0;
  let noCountry = 0;
  for (const meta of aggregate.providers) {
    if (seen.has(meta.entityId)) continue;
    seen.add(meta.entityId);
    const domain = meta.scopes[0]!;
    const country = meta.country ?? defaultCountry ?? countryFromDomain(domain);
    if (!country) {
      skipped.push(`${meta.entityId}: no country in its metadata or scope`);
      seen.delete(meta.entityId);
      noCountry++;
      continue;
    }
    const before = existing.get(meta.entityId);
    const entry: StoredIdentityProvider = {
      id: before?.id ?? newId('identityProvider', deps.clock),
      environment: federation.environment,
      protocol: 'saml',
      entityId: meta.entityId,
      name: meta.name,
      domain,
      country,
      scopes: meta.scopes,
      saml: { ssoUrl: meta.ssoUrl, certificates: meta.certificates },
      federation: federation.id,
      createdAt: before?.createdAt ?? now,
      clientSecretSealed: null,
    };
    if (
      before &&
      before.name === entry.name &&
      before.domain === entry.domain &&
      before.country === entry.country &&
      JSON.stringify(before.scopes) === JSON.stringify(entry.scopes) &&
      JSON.stringify(before.saml) === JSON.stringify(entry.saml)
    ) {
      unchanged++;
      continue;
    }
    if (!before) added++;
    writes.push(entry);
  }
  let written = 0;
  for (let i = 0; i < writes.length; i += BATCH) {
    written += await upsertFederationEntries(deps.db, federation.id, writes.slice(i, i + BATCH));
    await yieldToRequests();
  }
  // Rows not written were new entities already registered otherwise: skipped, not added.
  const conflicts = writes.length - written;
  const gone = [...existing.values()].filter((p) => !seen.has(p.entityId)).map((p) => p.id);
  let removed = 0;
  for (let i = 0; i < gone.length; i += BATCH) {
    removed += await deleteFederationEntries(deps.db, federation.id, gone.slice(i, i + BATCH));
    await yieldToRequests();
  }
  if (conflicts > 0) skipped.push(`${conflicts} entities are registered already, alone or by another federation`);
  return {
    counts: {
      added: added - conflicts,
      updated: writes.length - added,
      removed,
      unchanged,
      skipped: aggregate.skipped.length + noCountry + conflicts,
    },
    skipped: skipped.slice(0, 100),
  };
}

const COUNTRY = /^[A-Z]{2}$/;

/** Loads a federation aggregate: verified, then each of its IdPs registered. */
export async function addFederation(deps: Deps, input: AddFederationInput): Promise<FederationOutcome> {
  const problems: string[] = [];
  if ((input.metadata === undefined) === (input.metadataUrl === undefined))
    problems.push('give the federation metadata or its URL (one of them)');
  if (input.metadataUrl !== undefined) {
    const shape = checkTargetUrlShape(input.metadataUrl, {
      allowPrivateTargets: deps.config.outboundAllowPrivateTargets,
    });
    if (!shape.ok) problems.push(`metadataUrl: ${shape.message}`);
  }
  try {
    new X509Certificate(input.signingCertificate);
  } catch {
    problems.push('signingCertificate: not a PEM X.509 certificate');
  }
  if (input.country !== undefined && !COUNTRY.test(input.country))
    problems.push('country: ISO 3166-1 alpha-2, upper case');
  if (problems.length) return { ok: false, kind: 'invalid', problems };
  let xml = input.metadata;
  if (input.metadataUrl !== undefined) {
    const fetched = await fetchAggregate(deps, input.metadataUrl);
    if (!fetched.ok) return { ok: false, kind: 'invalid', problems: [`metadataUrl: ${fetched.problem}`] };
    xml = fetched.xml;
  }
  const now = deps.clock.now();
  const aggregate = await verifyAggregateInThread(xml!, {
    signingCertificate: input.signingCertificate,
    now,
    maxBytes: deps.config.universityLogin.federationMaxBytes,
  });
  xml = undefined;
  if (!aggregate.ok) return { ok: false, kind: 'invalid', problems: [aggregate.problem] };
  if (aggregate.providers.length === 0)
    return {
      ok: false,
      kind: 'invalid',
      problems: ['the aggregate has no usable identity provider', ...aggregate.skipped.slice(0, 20)],
    };
  const federation: IdentityFederation = {
    id: newId('identityFederation', deps.clock),
    environment: input.environment ?? 'live',
    name: (input.name ?? aggregate.name ?? (input.metadataUrl ? new URL(input.metadataUrl).host : 'federation')).slice(
      0,
      200,
    ),
    metadataUrl: input.metadataUrl ?? null,
    defaultCountry: input.country ?? null,
    signingCertificate: new X509Certificate(input.signingCertificate).toString(),
    validUntil: aggregate.validUntil,
    cacheDurationSeconds: aggregate.cacheDurationSeconds ?? null,
    entityCount: 0,
    refreshedAt: now.toISOString(),
    nextRefreshAt: nextRefresh(deps, now, aggregate, input.metadataUrl !== undefined),
    lastError: null,
    createdAt: now.toISOString(),
  };
  await insertFederation(deps.db, federation);
  const synced = await syncEntries(deps, federation, aggregate, federation.defaultCountry ?? undefined);
  federation.entityCount = synced.counts.added + synced.counts.updated + synced.counts.unchanged;
  await updateFederationStatus(deps.db, federation.id, { entityCount: federation.entityCount });
  return { ok: true, federation: federationView(federation), ...synced };
}

export type RefreshOutcome =
  | { ok: true; federation: FederationView; counts: SyncCounts; skipped: string[] }
  | { ok: false; federation: FederationView; problem: string; withdrawn: number };

/**
 * Refreshes one federation from its URL, or from `metadata` given now (a file-loaded one). On
 * failure the entries stay while the last verified aggregate is valid, and are withdrawn after.
 */
export async function refreshFederation(
  deps: Deps,
  id: string,
  input: { metadata?: string } = {},
): Promise<RefreshOutcome | undefined> {
  const federation = await findFederation(deps.db, id);
  if (!federation) return undefined;
  const now = deps.clock.now();
  let xml = input.metadata;
  let problem: string | undefined;
  if (xml === undefined) {
    if (federation.metadataUrl === null) problem = 'loaded from a file: give the metadata again to refresh it';
    else {
      const fetched = await fetchAggregate(deps, federation.metadataUrl);
      if (fetched.ok) xml = fetched.xml;
      else problem = fetched.problem;
    }
  }
  let aggregate: AggregateOutcome | undefined;
  if (xml !== undefined) {
    aggregate = await verifyAggregateInThread(xml, {
      signingCertificate: federation.signingCertificate,
      now,
      maxBytes: deps.config.universityLogin.federationMaxBytes,
    });
    xml = undefined;
    if (!aggregate.ok) problem = aggregate.problem;
  }
  if (problem !== undefined || !aggregate?.ok) {
    const expired = federation.validUntil !== null && Date.parse(federation.validUntil) <= now.getTime();
    let withdrawn = 0;
    if (expired) {
      const ids = (await federationEntries(deps.db, federation.id)).map((p) => p.id);
      for (let i = 0; i < ids.length; i += BATCH) {
        withdrawn += await deleteFederationEntries(deps.db, federation.id, ids.slice(i, i + BATCH));
        await yieldToRequests();
      }
    }
    const status = {
      lastError: (problem ?? 'refresh failed').slice(0, 500),
      nextRefreshAt:
        federation.metadataUrl === null ? null : new Date(now.getTime() + RETRY_SECONDS * 1000).toISOString(),
      ...(expired ? { entityCount: 0 } : {}),
    };
    await updateFederationStatus(deps.db, federation.id, status);
    return {
      ok: false,
      federation: federationView({ ...federation, ...status }),
      problem: status.lastError,
      withdrawn,
    };
  }
  const synced = await syncEntries(deps, federation, aggregate, federation.defaultCountry ?? undefined);
  const status = {
    validUntil: aggregate.validUntil,
    cacheDurationSeconds: aggregate.cacheDurationSeconds ?? null,
    entityCount: synced.counts.added + synced.counts.updated + synced.counts.unchanged,
    refreshedAt: now.toISOString(),
    nextRefreshAt: nextRefresh(deps, now, aggregate, federation.metadataUrl !== null),
    lastError: null,
  };
  await updateFederationStatus(deps.db, federation.id, status);
  return { ok: true, federation: federationView({ ...federation, ...status }), ...synced };
}

/** The `federation-refresh` job's step: every federation due, one after the other. */
export async function refreshDueFederations(deps: Deps): Promise<{ refreshed: number; failed: number }> {
  let refreshed = 0;
  let failed = 0;
  for (const federation of await dueFederations(deps.db, deps.clock.now().toISOString())) {
    const outcome = await refreshFederation(deps, federation.id);
    if (outcome?.ok) refreshed++;
    else failed++;
  }
  return { refreshed, failed };
}

export async function registeredFederations(deps: { db: Db }, environment?: Environment): Promise<FederationView[]> {
  return (await listFederations(deps.db, environment)).map(federationView);
}

export async function registeredFederation(deps: { db: Db }, id: string): Promise<FederationView | undefined> {
  const found = await findFederation(deps.db, id);
  return found && federationView(found);
}

/** Removes a federation and every entry loaded from it (logins through them stop at once). */
export async function removeFederation(
  deps: { db: Db },
  id: string,
): Promise<{ federation: FederationView; removed: number } | undefined> {
  const found = await findFederation(deps.db, id);
  if (!found) return undefined;
  const ids = (await federationEntries(deps.db, id)).map((p) => p.id);
  let removed = 0;
  for (let i = 0; i < ids.length; i += BATCH) {
    removed += await deleteFederationEntries(deps.db, id, ids.slice(i, i + BATCH));
    await yieldToRequests();
  }
  await deleteFederation(deps.db, id);
  return { federation: federationView(found), removed };
}
