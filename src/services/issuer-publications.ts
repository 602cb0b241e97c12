import type { Dispatcher } from 'undici';
import { BoundedCache } from '../domain/bounded-cache.ts';
import type { Clock } from '../domain/clock.ts';
import type { Fetched, IssuerPublications, StatusListPolicy } from '../domain/credentials.ts';
import { didDocumentKeys, didWebUrl } from '../proofs/jwt-vc/dids.ts';
import { decodeJwt } from '../proofs/sd-jwt-vc/compact.ts';
import type { IssuerFetchKind, MetricsRecorder } from '../domain/metrics.ts';
import { fetchPublished, type FetchedDocument, type FetchPolicy } from '../outbound/fetch.ts';

/**
 * What issuers publish, fetched and cached (docs/trust.md):
 *
 * - SD-JWT VC issuer metadata (`/.well-known/jwt-vc-issuer`, with `jwks` or `jwks_uri`), or for an
 *   issuer identifier `did:web:…` its DID document (`jwt_vc_json`), cached per
 *   its Cache-Control `max-age` within [min, max] (default 5 min to 24 h); without a `max-age` the
 *   minimum. An unknown `kid` re-fetches, at most once per {@link MIN_REFRESH_INTERVAL_MS}.
 * - Token Status List tokens, cached per their `ttl` and `exp` but never beyond the configured
 *   maximum (default 5 min), so that a revocation shows within minutes.
 *
 * Expiry runs on the injected clock. Nothing here is trusted: the verifier checks signatures. A
 * failed fetch is not cached and a stale copy is never served: the verifier fails closed.
 */

/** A forced re-fetch (unknown `kid`) happens at most this often per issuer. */
export const MIN_REFRESH_INTERVAL_MS = 30_000;

/** Entries kept per cache (metadata, status lists); past it the least recently used goes. */
export const PUBLICATIONS_CACHE_ENTRIES = 1_000;

export interface PublicationsOptions {
  clock: Clock;
  dispatcher: Dispatcher;
  allowPrivateTargets: boolean;
  timeoutMs: number;
  maxBytes: number;
  metadataCacheMinSeconds: number;
  metadataCacheMaxSeconds: number;
  statusListCacheMaxSeconds: number;
  statusListPolicy: StatusListPolicy;
  /** Counts each network fetch (`matricula_issuer_fetches_total`). */
  metrics?: MetricsRecorder;
  /** Entries per cache; {@link PUBLICATIONS_CACHE_ENTRIES} by default. */
  cacheEntries?: number;
  /** Prefix of this service's own sandbox status lists (`{BASE_URL}/sandbox/status-lists/`). */
  sandboxStatusListPrefix?: string;
  /**
   * Status lists this service publishes itself (the sandbox universities'): read from the database
   * rather than over the network, and never cached, so an operator's revocation shows at once.
   */
  localStatusList?: (uri: string) => Promise<Fetched<string> | undefined>;
}

interface Cached<T> {
  value: T;
  fetchedAt: number;
  expiresAt: number;
}

/** The metadata URL of an issuer identifier: `/.well-known/jwt-vc-issuer` inserted before its path. */
export function metadataUrl(issuerIdentifier: string): string | undefined {
  try {
    const url = new URL(issuerIdentifier);
    if (url.search || url.hash) return undefined;
    const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
    return `${url.origin}/.well-known/jwt-vc-issuer${path}`;
  } catch {
    return undefined;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jwksKeys(value: unknown): JsonWebKey[] | undefined {
  return isObject(value) && Array.isArray(value.keys) && value.keys.every(isObject)
    ? (value.keys as JsonWebKey[])
    : undefined;
}

export class CachingIssuerPublications implements IssuerPublications {
  readonly statusListPolicy: StatusListPolicy;
  private readonly metadata: BoundedCache<string, Cached<JsonWebKey[]>>;
  private readonly statusLists: BoundedCache<string, Cached<string>>;
  private readonly inFlight = new Map<string, Promise<Fetched<unknown>>>();
  private readonly fetchPolicy: FetchPolicy;

  constructor(private readonly options: PublicationsOptions) {
    this.statusListPolicy = options.statusListPolicy;
    this.metadata = new BoundedCache(options.cacheEntries ?? PUBLICATIONS_CACHE_ENTRIES);
    this.statusLists = new BoundedCache(options.cacheEntries ?? PUBLICATIONS_CACHE_ENTRIES);
    this.fetchPolicy = {
      dispatcher: options.dispatcher,
      allowPrivateTargets: options.allowPrivateTargets,
      clock: options.clock,
      timeoutMs: options.timeoutMs,
      maxBytes: options.maxBytes,
    };
  }

  private async fetch(kind: IssuerFetchKind, url: string, accept: string): Promise<Fetched<FetchedDocument>> {
    const fetched = await fetchPublished(url, accept, this.fetchPolicy);
    this.options.metrics?.issuerFetch({ kind, result: fetched.ok ? 'ok' : 'error' });
    return fetched;
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }

  /** One fetch per key at a time: concurrent verifications of one issuer share it. */
  private once<T>(key: string, load: () => Promise<Fetched<T>>): Promise<Fetched<T>> {
    const running = this.inFlight.get(key) as Promise<Fetched<T>> | undefined;
    if (running) return running;
    const promise = load().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, promise);
    return promise;
  }

  async metadataKeys(issuerIdentifier: string, options: { refresh?: boolean } = {}): Promise<Fetched<JsonWebKey[]>> {
    const cached = this.metadata.get(issuerIdentifier);
    const now = this.now();
    const fresh = cached !== undefined && now < cached.expiresAt;
    const justFetched = cached !== undefined && now - cached.fetchedAt < MIN_REFRESH_INTERVAL_MS;
    if (cached && ((fresh && !options.refresh) || justFetched)) return { ok: true, value: cached.value };
    return this.once(`metadata ${issuerIdentifier}`, async () => {
      const loaded = await this.loadMetadata(issuerIdentifier);
      if (!loaded.ok) return loaded;
      const { min, max } = {
        min: this.options.metadataCacheMinSeconds,
        max: this.options.metadataCacheMaxSeconds,
      };
      const seconds = Math.min(max, Math.max(min, loaded.value.maxAgeSeconds ?? min));
      const at = this.now();
      this.metadata.set(issuerIdentifier, { value: loaded.value.keys, fetchedAt: at, expiresAt: at + seconds * 1000 });
      return { ok: true, value: loaded.value.keys };
    });
  }

  /** Forgets an issuer's cached metadata (`matricula issuers refresh`), then fetches it. */
  async refreshMetadata(issuerIdentifier: string): Promise<Fetched<JsonWebKey[]>> {
    this.metadata.delete(issuerIdentifier);
    return this.metadataKeys(issuerIdentifier);
  }

  private async loadMetadata(
    issuerIdentifier: string,
  ): Promise<Fetched<{ keys: JsonWebKey[]; maxAgeSeconds?: number }>> {
    if (issuerIdentifier.startsWith('did:web:')) return this.loadDidDocument(issuerIdentifier);
    const url = metadataUrl(issuerIdentifier);
    if (!url) return { ok: false, message: `${issuerIdentifier} is not an issuer identifier URL` };
    const fetched = await this.fetch('metadata', url, 'application/json');
    if (!fetched.ok) return fetched;
    const document = parseJson(fetched.value.body);
    if (!isObject(document)) return { ok: false, message: `${url} is not a JSON object` };
    if (document.issuer !== issuerIdentifier)
      return { ok: false, message: `${url} names issuer ${JSON.stringify(document.issuer)}, not ${issuerIdentifier}` };
    if (document.jwks !== undefined) {
      const keys = jwksKeys(document.jwks);
      if (!keys) return { ok: false, message: `${url}: jwks is not a JWK set` };
      return { ok: true, value: { keys, maxAgeSeconds: fetched.value.maxAgeSeconds } };
    }
    if (typeof document.jwks_uri !== 'string') return { ok: false, message: `${url} has neither jwks nor jwks_uri` };
    const jwks = await this.fetch('jwks', document.jwks_uri, 'application/jwk-set+json, application/json');
    if (!jwks.ok) return jwks;
    const keys = jwksKeys(parseJson(jwks.value.body));
    if (!keys) return { ok: false, message: `${document.jwks_uri} is not a JWK set` };
    const ages = [fetched.value.maxAgeSeconds, jwks.value.maxAgeSeconds].filter((age) => age !== undefined);
    return { ok: true, value: { keys, maxAgeSeconds: ages.length ? Math.min(...ages) : undefined } };
  }

  /** A `did:web` DID document's assertion keys, fetched through the same guard as the metadata. */
  private async loadDidDocument(did: string): Promise<Fetched<{ keys: JsonWebKey[]; maxAgeSeconds?: number }>> {
    const url = didWebUrl(did, { allowLoopbackHttp: this.options.allowPrivateTargets });
    if (!url) return { ok: false, message: `${did} is not a did:web identifier` };
    const fetched = await this.fetch('metadata', url, 'application/did+json, application/json');
    if (!fetched.ok) return fetched;
    const keys = didDocumentKeys(did, parseJson(fetched.value.body));
    if (typeof keys === 'string') return { ok: false, message: `${url}: ${keys}` };
    return { ok: true, value: { keys, maxAgeSeconds: fetched.value.maxAgeSeconds } };
  }

  /**
   * A sandbox issuer's keys are public, so anyone can sign a sandbox credential naming any status
   * list URI: for those only our own lists are read, and nothing is ever fetched.
   */
  async statusListToken(uri: string, options: { sandbox?: boolean; accept?: string } = {}): Promise<Fetched<string>> {
    const prefix = this.options.sandboxStatusListPrefix;
    if (options.sandbox && (prefix === undefined || !uri.startsWith(prefix)))
      return {
        ok: false,
        refused: true,
        message: `a sandbox credential's status list must be one of this service's (${prefix ?? 'none configured'})`,
      };
    const local = await this.options.localStatusList?.(uri);
    if (local) return local.ok ? local : { ...local, refused: true };
    if (options.sandbox)
      return { ok: false, refused: true, message: `${uri} is not a sandbox status list of this service` };
    const cached = this.statusLists.get(uri);
    if (cached && this.now() < cached.expiresAt) return { ok: true, value: cached.value };
    return this.once(`status ${uri}`, async () => {
      const fetched = await this.fetch('status_list', uri, options.accept ?? 'application/statuslist+jwt');
      if (!fetched.ok) return fetched;
      return { ok: true, value: fetched.value.body.trim() };
    });
  }

  /** Caches a fetched token once the verifier has checked it (never a local one: those are read afresh). */
  statusListVerified(uri: string, token: string): void {
    const prefix = this.options.sandboxStatusListPrefix;
    if (prefix !== undefined && uri.startsWith(prefix)) return;
    this.cacheStatusList(uri, token);
  }

  /** Cached for the token's `ttl`, not past its `exp`, never beyond the configured maximum. */
  private cacheStatusList(uri: string, token: string): void {
    const payload = decodeJwt(token)?.payload;
    if (!payload) return;
    const now = this.now();
    let seconds = this.options.statusListCacheMaxSeconds;
    if (typeof payload.ttl === 'number' && payload.ttl >= 0) seconds = Math.min(seconds, payload.ttl);
    if (typeof payload.exp === 'number') seconds = Math.min(seconds, payload.exp - now / 1000);
    if (seconds > 0) this.statusLists.set(uri, { value: token, fetchedAt: now, expiresAt: now + seconds * 1000 });
  }
}
