import type { Config } from '../config.ts';
import type { Clock } from '../domain/clock.ts';
import type { TrustRegistry } from '../domain/credentials.ts';
import { createVerifiers, type Verifiers } from '../proofs/formats.ts';
import { ProofPool } from '../proofs/worker/pool.ts';
import { inProcessRunner, type ProofRunner } from '../proofs/worker/tasks.ts';
import type { Db } from '../store/db.ts';
import { SessionInserts } from '../store/session-inserts.ts';
import { KeyLookups } from '../store/key-lookups.ts';
import { sessionStatuses } from '../store/sessions.ts';
import { SessionWatch } from './session-watch.ts';
import { DeliveryWakeups } from '../webhooks/wake.ts';
import { PrometheusMetrics, type PoolStats } from './metrics.ts';
import type { MetricsRecorder } from '../domain/metrics.ts';
import { databaseTrustRegistry } from './trust-registry.ts';
import { CachingIssuerPublications } from './issuer-publications.ts';
import { localSandboxStatusLists, sandboxStatusListUri } from './sandbox-status-lists.ts';
import { createGuardedDispatcher } from '../outbound/ssrf.ts';
import { createUnitOfWork, type UnitOfWork } from './unit-of-work.ts';
import { configureOpenid4vpLibraries } from './openid4vp/library-config.ts';
import { profileCatalog, type ProfileCatalog } from './credential-profiles.ts';
import { loadRequestSigner, type RequestSigner } from './openid4vp/signer.ts';
import { loadSpKeys, type SamlKeyPair } from './sso/saml/sp-keys.ts';
import { ProviderDirectory } from './sso/directory.ts';
import { OidcDiscovery } from './sso/oidc/discovery.ts';

/** What every use case needs, assembled once by the composition root and passed to every part. */
export interface ServiceDeps {
  db: Db;
  clock: Clock;
  config: Config;
  trustRegistry: TrustRegistry;
  /** Issuer metadata and status lists, fetched through the SSRF guard and cached (docs/trust.md). */
  publications: CachingIssuerPublications;
  /** The verifier of every accepted format, with the keys the configuration names. */
  verifiers: Verifiers;
  /** Runs a state change, its events and the wake-up of the workers (services/unit-of-work.ts). */
  unitOfWork: UnitOfWork;
  /** This process's delivery workers subscribe here; only the unit of work notifies. */
  wakeups: DeliveryWakeups;
  /** This instance's Prometheus metrics (GET /metrics); use cases and the worker record through it. */
  metrics: PrometheusMetrics;
  /**
   * Where BBS and Groth16 proofs are built and verified: the pool of worker threads
   * (PROOF_WORKERS), or the calling thread when it is 0.
   */
  proofs: ProofRunner;
  /** Stops what these dependencies started (the proof pool's threads). The app calls it on close. */
  close(): Promise<void>;
  /** New sessions, written together when several arrive during one insert (group commit). */
  sessionInserts: SessionInserts;
  /** The key reads of authentication, grouped per turn of the event loop on PostgreSQL. */
  keyLookups: KeyLookups;
  /** The OpenID4VP request signer, loaded (or, in sandbox, generated) on first use and kept. */
  requestSigner: () => Promise<RequestSigner>;
  /** The status requests waiting for a session to change; the unit of work wakes them after commit. */
  sessionWatch: SessionWatch;
  /** The credential profiles: built-in, CREDENTIAL_PROFILES_FILE, and stored (docs/credential-profiles.md). */
  profiles: ProfileCatalog;
  /** The SAML service provider's key and certificate: the operator's, or generated once and kept (sso/saml/sp-keys.ts). */
  samlKeys: () => Promise<SamlKeyPair>;
  /** The identity providers the portal's search runs over, re-read every 30 s (sso/directory.ts). */
  providerDirectory: ProviderDirectory;
  /** OpenID providers' discovery documents and keys, fetched through the outbound guard and kept a while (sso/oidc/discovery.ts). */
  oidcDiscovery: OidcDiscovery;
}

/** Issuer metadata and status lists as the configuration says: SSRF guard, timeout, size limit, cache bounds. */
export function createIssuerPublications(input: {
  db: Db;
  clock: Clock;
  config: Config;
  metrics?: MetricsRecorder;
}): CachingIssuerPublications {
  const { trust } = input.config;
  return new CachingIssuerPublications({
    clock: input.clock,
    dispatcher: createGuardedDispatcher({ allowPrivateTargets: input.config.outboundAllowPrivateTargets }),
    allowPrivateTargets: input.config.outboundAllowPrivateTargets,
    timeoutMs: trust.fetchTimeoutMs,
    maxBytes: trust.fetchMaxBytes,
    metadataCacheMinSeconds: trust.metadataCacheMinSeconds,
    metadataCacheMaxSeconds: trust.metadataCacheMaxSeconds,
    statusListCacheMaxSeconds: trust.statusListCacheMaxSeconds,
    statusListPolicy: trust.statusListPolicy,
    localStatusList: localSandboxStatusLists(input),
    sandboxStatusListPrefix: sandboxStatusListUri(input.config.baseUrl, ''),
    metrics: input.metrics,
  });
}

/** `load` once; a failure is not kept, so the next call tries again. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= load().catch((err: unknown) => {
      pending = undefined;
      throw err;
    }));
}

export function createServiceDeps(input: {
  db: Db;
  clock: Clock;
  config: Config;
  /** The PostgreSQL pool (Store.pgPool), whose use the metrics report. */
  pool?: PoolStats;
}): ServiceDeps {
  configureOpenid4vpLibraries(input.config);
  const wakeups = new DeliveryWakeups();
  const sessionWatch = new SessionWatch(input.clock, (ids) => sessionStatuses(input.db, ids));
  const { proofWorkers, proofQueueMax } = input.config;
  const pool = proofWorkers > 0 ? new ProofPool({ threads: proofWorkers, maxQueue: proofQueueMax }) : undefined;
  const metrics = new PrometheusMetrics({
    db: input.db,
    clock: input.clock,
    pool: input.pool,
    proofPool: pool,
    statusWaits: sessionWatch,
  });
  const publications = createIssuerPublications({ ...input, metrics });
  const proofs = pool ?? inProcessRunner;
  return {
    db: input.db,
    clock: input.clock,
    config: input.config,
    publications,
    trustRegistry: databaseTrustRegistry(input.db, undefined, publications, {
      allowedEkus: input.config.trust.x509AllowedEkus,
    }),
    verifiers: createVerifiers({
      groth16LiveVerificationKeyPath: input.config.groth16LiveVerificationKey,
      runner: proofs,
    }),
    unitOfWork: createUnitOfWork({ db: input.db, clock: input.clock, wakeups, sessions: sessionWatch }),
    wakeups,
    metrics,
    proofs,
    close: async () => pool?.close(),
    sessionInserts: new SessionInserts(input.db),
    keyLookups: new KeyLookups(input.db),
    requestSigner: once(() => loadRequestSigner(input)),
    samlKeys: once(() => loadSpKeys(input)),
    providerDirectory: new ProviderDirectory(input.db, input.clock),
    oidcDiscovery: new OidcDiscovery({
      clock: input.clock,
      allowPrivateTargets: input.config.outboundAllowPrivateTargets,
      timeoutMs: input.config.trust.fetchTimeoutMs,
      maxBytes: input.config.trust.fetchMaxBytes,
    }),
    sessionWatch,
    profiles: profileCatalog(input.db, input.config),
  };
}

/** The database handle every use case takes (a Kysely instance over SQLite or PostgreSQL). */
export type { Db } from '../store/db.ts';
