/**
 * Configuration: one schema, parsed once at start, failing fast with one line that names the
 * variable. Everything else receives the parsed {@link Config}; nothing reads process.env.
 */
import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { DEFAULT_RETRY_SCHEDULE_SECONDS, parseRetrySchedule, RetryScheduleError } from './domain/backoff.ts';
import {
  DEFAULT_ALLOWED_EKUS,
  EXTENDED_KEY_USAGES,
  STATUS_LIST_POLICIES,
  type StatusListPolicy,
} from './domain/credentials.ts';
import { DEFAULT_RESULT_RETENTION_DAYS } from './domain/redaction.ts';
import { loadLiveVerificationKey, VerificationKeyError } from './proofs/groth16/verification-key.ts';
import { parseServerArgs, ServerArgsError } from './server-args.ts';
import type { CredentialProfile } from './domain/credential-profiles.ts';
import { readProfilesFile } from './profiles-file.ts';

export type Role = 'api' | 'worker' | 'all';

export interface Config {
  port: number;
  host: string;
  /** `{base_url}` of the spec; also the audience presentations must be bound to. */
  baseUrl: string;
  /** `{portal_url}` of the spec. */
  portalUrl: string;
  /** `{app_scheme}` of the spec. */
  appScheme: string;
  databaseUrl: string;
  /**
   * DATABASE_CONNECT_TIMEOUT_MS (PostgreSQL): how long a request waits to connect, or for a free
   * connection, before it answers 503.
   */
  databaseConnectTimeoutMs: number;
  /**
   * DATABASE_QUERY_TIMEOUT_MS (PostgreSQL): a query unanswered this long closes its connection and
   * its request answers 503, so a server gone silent does not hang requests; 0 turns it off.
   */
  databaseQueryTimeoutMs: number;
  /**
   * OUTBOUND_ALLOW_PRIVATE_TARGETS (alias WEBHOOK_ALLOW_PRIVATE_TARGETS): every outgoing fetch
   * (webhooks, issuer metadata, status lists) may use http:// and reach loopback and private
   * addresses, never cloud metadata. For local development and tests.
   */
  outboundAllowPrivateTargets: boolean;
  /** Seconds between delivery attempts; the last entry is the final retry. */
  webhookRetrySchedule: readonly number[];
  /**
   * How long a claimed delivery's lease lasts without a heartbeat: the worker renews it every third
   * of this while the delivery is in flight, so it is how soon a dead worker's deliveries are
   * claimed again.
   */
  webhookLeaseSeconds: number;
  /** Largest accepted request body, bytes. */
  bodyLimitBytes: number;
  /** Path of the Groth16 verification key from the operator's ceremony; without it live groth16 is refused. */
  groth16LiveVerificationKey?: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `json` lines (default) or `pretty`, human-readable, for development. */
  logFormat: 'json' | 'pretty';
  /** One `request` line per answered request at info; off by default (5xx answers are logged either way). */
  accessLog: boolean;
  /** Keep a valid incoming X-Request-Id (set by a trusted proxy) instead of generating one. */
  trustProxyRequestId: boolean;
  /** Browser origins allowed to call the public endpoints (session status, wallet); none by default. */
  corsOrigins: readonly string[];
  role: Role;
  /** Bearer token GET /metrics requires; unset, the metrics are open. */
  metricsToken?: string;
  /**
   * METRICS_PORT: a second listener with /metrics, /healthz and /readyz only, in any role. The way
   * to scrape a `worker` process, which serves nothing on PORT.
   */
  metricsPort?: number;
  /** Bearer token of the admin API (/admin/v1); unset, the admin API is off (404). */
  adminToken?: string;
  /**
   * Worker threads that build and verify BBS and Groth16 proofs off the event loop; 0 runs them
   * on the event loop (a baseline for benchmarks, not for production).
   */
  proofWorkers: number;
  /** Proof tasks that may wait for a worker thread; beyond that a request is refused with a 429. */
  proofQueueMax: number;
  /** Requests per minute and per process (docs/security.md#rate-limits); 0 turns a limit off. */
  rateLimits: RateLimits;
  /**
   * Which proxies' X-Forwarded-For names the client (Fastify's trustProxy): false (none, the
   * socket's address is the client), true (any), a hop count, or addresses and CIDR ranges.
   * Behind a load balancer, without it every client shares the balancer's address and its limit.
   */
  trustProxy: boolean | number | string[];
  /**
   * Days a session's data (result, metadata, clientReference) is kept after it ended before it is
   * redacted automatically; also how long webhook attempts keep their response bodies.
   */
  resultRetentionDays: number;
  /**
   * EVENT_RETENTION_DAYS: days an event is kept, with its webhook deliveries and their attempts,
   * before it is deleted (never while one of its deliveries is still due).
   */
  eventRetentionDays: number;
  /** How often each periodic job runs (src/jobs/), in seconds. */
  jobs: JobsConfig;
  /** Issuer trust and revocation (docs/trust.md). */
  trust: TrustConfig;
  openid4vp: Openid4vpConfig;
  /** CREDENTIAL_PROFILES_FILE: the operator's credential profiles (docs/credential-profiles.md); none when unset. */
  credentialProfiles: readonly CredentialProfile[];
  /** University login: SAML SP keys, response size, the key that seals OIDC client secrets (docs/university-login.md). */
  universityLogin: UniversityLoginConfig;
}

export interface RateLimits {
  /**
   * Per client address, on every route without an API key (docs, landing, unknown paths), and on
   * a session's public routes for the calls that name no existing session (or a wrong nonce).
   */
  publicPerMinute: number;
  /**
   * Per API key on POST /verification/v1/verify, which checks a proof. The session routes that
   * check or build one are bounded by the proof pool's queue (PROOF_QUEUE_MAX) instead.
   */
  heavyPerMinute: number;
  /** Per API key, on every route that requires one. */
  apiKeyPerMinute: number;
  /**
   * Per session, on its public routes, for the calls that name an existing session (with its
   * nonce or token where the route takes one): these no longer count per address, so that many
   * students behind one address share no budget. Counted apart for the page and status calls and
   * for the wallet's calls.
   */
  sessionPerMinute: number;
}

export interface JobsConfig {
  /** JOB_SESSION_EXPIRY_SECONDS: expiring sessions past their deadline (default 5). */
  sessionExpirySeconds: number;
  /** JOB_EXPIRED_ROWS_PURGE_SECONDS: purging old idempotent responses and spent nonces (default 600). */
  expiredRowsPurgeSeconds: number;
  /** JOB_RESULT_RETENTION_SECONDS: applying RESULT_RETENTION_DAYS (default 60). */
  resultRetentionSeconds: number;
  /** JOB_EVENT_RETENTION_SECONDS: applying EVENT_RETENTION_DAYS (default 60). */
  eventRetentionSeconds: number;
  /** JOB_FEDERATION_REFRESH_SECONDS: looking for federation aggregates due for a refresh (default 300). */
  federationRefreshSeconds: number;
}

export interface TrustConfig {
  /** STATUS_LIST_POLICY: when a credential's revocation status cannot be determined, refuse (default) or warn. */
  statusListPolicy: StatusListPolicy;
  /** ISSUER_METADATA_CACHE_MIN_SECONDS / _MAX_SECONDS: bounds on how long issuer metadata is cached. */
  metadataCacheMinSeconds: number;
  metadataCacheMaxSeconds: number;
  /** STATUS_LIST_CACHE_MAX_SECONDS: a status list is cached per its ttl/exp, never longer than this. */
  statusListCacheMaxSeconds: number;
  /** ISSUER_FETCH_TIMEOUT_MS: budget of one fetch of metadata, JWKS or status list. */
  fetchTimeoutMs: number;
  /** ISSUER_FETCH_MAX_BYTES: largest metadata, JWKS or status list accepted. */
  fetchMaxBytes: number;
  /**
   * X509_ALLOWED_EKUS: the extended key usages (OIDs) an `x5c` leaf that states the extension must
   * have one of to sign credentials and status lists; empty (`none`) refuses every leaf that states one.
   */
  x509AllowedEkus: readonly string[];
}

/** OpenID for Verifiable Presentations 1.0: how sessions are offered to standard wallets. */
export interface Openid4vpConfig {
  /** URI scheme of `openid4vpUri` (`openid4vp`; EU wallets also register `haip-vp`, `eudi-openid4vp`). */
  scheme: string;
  /**
   * `x509_hash` (HAIP 1.0): signed requests (JAR) by reference, the client id is the SHA-256 of the
   * request certificate. `x509_san_dns`: the same, the client id is the certificate's SAN, the
   * BASE_URL host. `redirect_uri`: unsigned requests by value, for local development.
   */
  clientIdPrefix: 'x509_hash' | 'x509_san_dns' | 'redirect_uri';
  /** `direct_post.jwt` (the response encrypted to a key of the session) or `direct_post`. */
  responseMode: 'direct_post.jwt' | 'direct_post';
  /** SD-JWT VC `vct` values the DCQL query asks for and the verifier accepts. */
  acceptedVct: readonly string[];
  /** The operator's request-signing key (PKCS#8 PEM, P-256) and certificate chain (PEM, leaf first); both or neither. */
  signingKeyPem?: string;
  certificateChainPem?: string;
}

export interface UniversityLoginConfig {
  /** SAML_SP_KEY_FILE / SAML_SP_CERTIFICATE_FILE (RSA, PEM): both or neither; else a generated sandbox pair. */
  spKeyPem?: string;
  spCertificatePem?: string;
  /** SAML_MAX_RESPONSE_BYTES: the largest SAML response accepted (default 256 KiB). */
  samlMaxResponseBytes: number;
  /** IDP_SECRETS_KEY: 32 bytes (base64 or hex) sealing OpenID Connect client secrets at rest. */
  secretsKey?: Buffer;
  /** SAML_SP_DISPLAY_NAME: the MDUI display name of the SP metadata (default Matricula). */
  spDisplayName: string;
  /** FEDERATION_METADATA_MAX_BYTES: the largest federation aggregate accepted (default 64 MiB). */
  federationMaxBytes: number;
  /** FEDERATION_FETCH_TIMEOUT_MS: budget of one fetch of a federation aggregate (default 60 s). */
  federationFetchTimeoutMs: number;
  /** FEDERATION_REFRESH_MAX_SECONDS: refresh an aggregate at least this often, whatever its cacheDuration (default 6 h). */
  federationRefreshMaxSeconds: number;
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

export const DEFAULT_RETRY_SCHEDULE = DEFAULT_RETRY_SCHEDULE_SECONDS;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const ROLES = ['api', 'worker', 'all'] as const;
const LOG_FORMATS = ['json', 'pretty'] as const;

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()))
    throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  const value = Number(raw.trim());
  if (value < min || value > max)
    throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(value)) return true;
  if (['false', '0', 'no'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false (got "${raw}")`);
}

/**
 * OUTBOUND_ALLOW_PRIVATE_TARGETS, or its older name WEBHOOK_ALLOW_PRIVATE_TARGETS (the guard served
 * webhooks first). Both set to different values is an error: a security switch must not be
 * decided by which name wins.
 */
function outboundAllowPrivateTargets(env: Env): boolean {
  const current = boolean(env, 'OUTBOUND_ALLOW_PRIVATE_TARGETS', false);
  const alias = boolean(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', false);
  const setCurrent = (env.OUTBOUND_ALLOW_PRIVATE_TARGETS ?? '') !== '';
  const setAlias = (env.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? '') !== '';
  if (setCurrent && setAlias && current !== alias)
    throw new ConfigError(
      'OUTBOUND_ALLOW_PRIVATE_TARGETS',
      `is ${current} but its older name WEBHOOK_ALLOW_PRIVATE_TARGETS is ${alias}; set only OUTBOUND_ALLOW_PRIVATE_TARGETS`,
    );
  return setCurrent ? current : alias;
}

function jobsConfig(env: Env): JobsConfig {
  return {
    sessionExpirySeconds: integer(env, 'JOB_SESSION_EXPIRY_SECONDS', 5, 1, 3600),
    expiredRowsPurgeSeconds: integer(env, 'JOB_EXPIRED_ROWS_PURGE_SECONDS', 600, 10, 86_400),
    resultRetentionSeconds: integer(env, 'JOB_RESULT_RETENTION_SECONDS', 60, 10, 86_400),
    eventRetentionSeconds: integer(env, 'JOB_EVENT_RETENTION_SECONDS', 60, 10, 86_400),
    federationRefreshSeconds: integer(env, 'JOB_FEDERATION_REFRESH_SECONDS', 300, 10, 86_400),
  };
}

function httpUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL (got "${raw}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(name, `must be an http(s) URL (got "${raw}")`);
  if (url.search || url.hash) throw new ConfigError(name, `must not have a query or fragment (got "${raw}")`);
  return raw.replace(/\/+$/, '');
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw))
    throw new ConfigError(name, `must be one of ${values.join(', ')} (got "${raw}")`);
  return raw as T;
}

/** CORS_ORIGINS: comma-separated origins (`https://shop.example`, no path), each exactly as browsers send it. */
function origins(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      let url: URL | undefined;
      try {
        url = new URL(entry);
      } catch {
        url = undefined;
      }
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== entry)
        throw new ConfigError(
          name,
          `must list origins such as https://shop.example, comma-separated, without a path or trailing slash (got "${entry}")`,
        );
      return entry;
    });
}

/** WEBHOOK_RETRY_SCHEDULE, parsed by the domain's one parser. */
function retrySchedule(env: Env): readonly number[] {
  try {
    return parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE);
  } catch (err) {
    if (err instanceof RetryScheduleError) throw new ConfigError('WEBHOOK_RETRY_SCHEDULE', err.message);
    throw err;
  }
}

/**
 * GROTH16_LIVE_VERIFICATION_KEY: read and checked here, so that a key anyone could forge proofs
 * against (exported before any phase-2 contribution, the sandbox key, a bad point) stops the
 * service at start with one line, like any other bad value.
 */
function groth16LiveVerificationKey(env: Env): string | undefined {
  const path = env.GROTH16_LIVE_VERIFICATION_KEY;
  if (path === undefined || path === '') return undefined;
  try {
    loadLiveVerificationKey(path);
  } catch (err) {
    if (err instanceof VerificationKeyError)
      throw new ConfigError('GROTH16_LIVE_VERIFICATION_KEY', `${path}: ${err.reason}`);
    throw err;
  }
  return path;
}

function databaseUrl(env: Env): string {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return 'sqlite:./data/matricula.sqlite';
  if (/^sqlite:/.test(raw) || /^postgres(ql)?:\/\//.test(raw)) return raw;
  throw new ConfigError(
    'DATABASE_URL',
    `must start with sqlite: or postgres:// (got "${raw.replace(/\/\/[^@/]*@/, '//***@')}")`,
  );
}

/** An operator's bearer token: unset or empty means none; too short to resist guessing is refused. */
function operatorToken(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 16 || /\s/.test(raw))
    throw new ConfigError(name, 'must be at least 16 characters without spaces (e.g. openssl rand -hex 32)');
  return raw;
}

/**
 * X509_ALLOWED_EKUS: comma-separated extended key usages, by name (`documentSigning`,
 * `anyExtendedKeyUsage`, … EXTENDED_KEY_USAGES) or as dotted OIDs; `none` for none at all.
 */
function allowedEkus(env: Env): readonly string[] {
  const raw = env.X509_ALLOWED_EKUS?.trim();
  if (raw === undefined || raw === '') return DEFAULT_ALLOWED_EKUS;
  if (raw.toLowerCase() === 'none') return [];
  const byName = new Map(Object.entries(EXTENDED_KEY_USAGES).map(([name, oid]) => [name.toLowerCase(), oid]));
  const oids = raw.split(',').map((entry) => {
    const name = entry.trim();
    const oid = byName.get(name.toLowerCase()) ?? (/^[0-2](\.(0|[1-9]\d*))+$/.test(name) ? name : undefined);
    if (oid === undefined)
      throw new ConfigError(
        'X509_ALLOWED_EKUS',
        `must list extended key usages, comma-separated, by name (${Object.keys(EXTENDED_KEY_USAGES).join(', ')}) or as dotted OIDs such as 1.3.6.1.5.5.7.3.36, or be "none" (got "${name}")`,
      );
    return oid;
  });
  return [...new Set(oids)];
}

function trustConfig(env: Env): TrustConfig {
  const metadataCacheMinSeconds = integer(env, 'ISSUER_METADATA_CACHE_MIN_SECONDS', 300, 60, 86_400);
  const metadataCacheMaxSeconds = integer(env, 'ISSUER_METADATA_CACHE_MAX_SECONDS', 86_400, 60, 7 * 86_400);
  if (metadataCacheMaxSeconds < metadataCacheMinSeconds)
    throw new ConfigError(
      'ISSUER_METADATA_CACHE_MAX_SECONDS',
      `must be at least ISSUER_METADATA_CACHE_MIN_SECONDS (${metadataCacheMinSeconds})`,
    );
  return {
    statusListPolicy: oneOf(env, 'STATUS_LIST_POLICY', STATUS_LIST_POLICIES, 'fail_closed'),
    metadataCacheMinSeconds,
    metadataCacheMaxSeconds,
    statusListCacheMaxSeconds: integer(env, 'STATUS_LIST_CACHE_MAX_SECONDS', 300, 0, 86_400),
    fetchTimeoutMs: integer(env, 'ISSUER_FETCH_TIMEOUT_MS', 5000, 100, 60_000),
    fetchMaxBytes: integer(env, 'ISSUER_FETCH_MAX_BYTES', 1024 * 1024, 1024, 16 * 1024 * 1024),
    x509AllowedEkus: allowedEkus(env),
  };
}

/** TRUST_PROXY: true/false, a number of hops, or comma-separated addresses and CIDR ranges. */
function trustProxy(env: Env): boolean | number | string[] {
  const raw = env.TRUST_PROXY?.trim();
  if (raw === undefined || raw === '') return false;
  if (/^(true|false|yes|no)$/i.test(raw)) return boolean(env, 'TRUST_PROXY', false);
  if (/^\d+$/.test(raw)) return integer(env, 'TRUST_PROXY', 0, 0, 100);
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.some((entry) => !/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(entry)))
    throw new ConfigError(
      'TRUST_PROXY',
      `must be true, false, a number of hops, or comma-separated addresses/CIDR ranges (got "${raw}")`,
    );
  return entries;
}

function readPemFile(env: Env, name: string): string | undefined {
  const path = env[name];
  if (path === undefined || path === '') return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(name, `cannot be read (${path}): ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!text.includes('-----BEGIN ')) throw new ConfigError(name, `must name a PEM file (${path})`);
  return text;
}

function openid4vpConfig(env: Env): Openid4vpConfig {
  const scheme = env.OPENID4VP_SCHEME || 'openid4vp';
  if (!/^[a-z][a-z0-9+.-]*$/.test(scheme))
    throw new ConfigError('OPENID4VP_SCHEME', `must be a URI scheme such as "openid4vp" (got "${scheme}")`);
  const vctRaw = env.OPENID4VP_ACCEPTED_VCT;
  const acceptedVct =
    vctRaw === undefined || vctRaw.trim() === ''
      ? ['StudentCredential']
      : vctRaw
          .split(',')
          .map((v) => v.trim())
          .filter((v) => v !== '');
  if (acceptedVct.length === 0 || acceptedVct.some((v) => /\s/.test(v) || v.length > 512))
    throw new ConfigError('OPENID4VP_ACCEPTED_VCT', `must list vct values, comma-separated (got "${vctRaw}")`);
  const signingKeyPem = readPemFile(env, 'OPENID4VP_SIGNING_KEY_FILE');
  const certificateChainPem = readPemFile(env, 'OPENID4VP_CERTIFICATE_CHAIN_FILE');
  if ((signingKeyPem === undefined) !== (certificateChainPem === undefined))
    throw new ConfigError(
      signingKeyPem === undefined ? 'OPENID4VP_SIGNING_KEY_FILE' : 'OPENID4VP_CERTIFICATE_CHAIN_FILE',
      'must be set together with ' +
        (signingKeyPem === undefined ? 'OPENID4VP_CERTIFICATE_CHAIN_FILE' : 'OPENID4VP_SIGNING_KEY_FILE'),
    );
  return {
    scheme,
    clientIdPrefix: oneOf(
      env,
      'OPENID4VP_CLIENT_ID_PREFIX',
      ['x509_hash', 'x509_san_dns', 'redirect_uri'] as const,
      'x509_hash',
    ),
    responseMode: oneOf(env, 'OPENID4VP_RESPONSE_MODE', ['direct_post.jwt', 'direct_post'] as const, 'direct_post.jwt'),
    acceptedVct,
    ...(signingKeyPem ? { signingKeyPem, certificateChainPem } : {}),
  };
}

function universityLoginConfig(env: Env): UniversityLoginConfig {
  const spKeyPem = readPemFile(env, 'SAML_SP_KEY_FILE');
  const spCertificatePem = readPemFile(env, 'SAML_SP_CERTIFICATE_FILE');
  if ((spKeyPem === undefined) !== (spCertificatePem === undefined))
    throw new ConfigError(
      spKeyPem === undefined ? 'SAML_SP_KEY_FILE' : 'SAML_SP_CERTIFICATE_FILE',
      `must be set together with ${spKeyPem === undefined ? 'SAML_SP_CERTIFICATE_FILE' : 'SAML_SP_KEY_FILE'}`,
    );
  const rawKey = env.IDP_SECRETS_KEY?.trim();
  let secretsKey: Buffer | undefined;
  if (rawKey) {
    secretsKey = /^[0-9a-f]{64}$/i.test(rawKey) ? Buffer.from(rawKey, 'hex') : Buffer.from(rawKey, 'base64');
    if (secretsKey.length !== 32)
      throw new ConfigError('IDP_SECRETS_KEY', 'must be 32 random bytes, hex or base64 (e.g. openssl rand -hex 32)');
  }
  const spDisplayName = (env.SAML_SP_DISPLAY_NAME ?? '').trim() || 'Matricula';
  return {
    ...(spKeyPem ? { spKeyPem, spCertificatePem } : {}),
    samlMaxResponseBytes: integer(env, 'SAML_MAX_RESPONSE_BYTES', 256 * 1024, 4096, 16 * 1024 * 1024),
    ...(secretsKey ? { secretsKey } : {}),
    spDisplayName: spDisplayName.slice(0, 100),
    federationMaxBytes: integer(env, 'FEDERATION_METADATA_MAX_BYTES', 64 * 1024 * 1024, 4096, 512 * 1024 * 1024),
    federationFetchTimeoutMs: integer(env, 'FEDERATION_FETCH_TIMEOUT_MS', 60_000, 100, 600_000),
    federationRefreshMaxSeconds: integer(env, 'FEDERATION_REFRESH_MAX_SECONDS', 6 * 3600, 60, 7 * 86_400),
  };
}

/**
 * Parses the environment, and the command line's flags that override it (`--role`, `--port`,
 * `--host`: server-args.ts), into a {@link Config}, or throws {@link ConfigError} (or
 * {@link ServerArgsError} for a command line it does not understand).
 */
export function loadConfig(baseEnv: Env = process.env, argv: string[] = []): Config {
  const args = parseServerArgs(argv);
  if (args.action !== 'run') throw new ServerArgsError(`--${args.action} is answered before the configuration is read`);
  const env: Env = { ...baseEnv, ...args.env };
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '0.0.0.0';
  const baseUrl = httpUrl(env, 'BASE_URL', `http://localhost:${port}`);
  const portalUrl = httpUrl(env, 'PORTAL_URL', baseUrl);
  const appScheme = env.APP_SCHEME || 'matricula';
  if (!/^[a-z][a-z0-9+.-]*$/.test(appScheme))
    throw new ConfigError('APP_SCHEME', `must be a URI scheme such as "matricula" (got "${appScheme}")`);
  const role = oneOf(env, 'ROLE', ROLES, 'all');
  const metricsPort =
    env.METRICS_PORT === undefined || env.METRICS_PORT === '' ? undefined : integer(env, 'METRICS_PORT', 0, 0, 65535);
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port && role !== 'worker')
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port}): the ${role} role listens on both`);
  return {
    port,
    host,
    baseUrl,
    portalUrl,
    appScheme,
    databaseUrl: databaseUrl(env),
    databaseConnectTimeoutMs: integer(env, 'DATABASE_CONNECT_TIMEOUT_MS', 5_000, 100, 120_000),
    databaseQueryTimeoutMs: integer(env, 'DATABASE_QUERY_TIMEOUT_MS', 30_000, 0, 3_600_000),
    outboundAllowPrivateTargets: outboundAllowPrivateTargets(env),
    webhookRetrySchedule: retrySchedule(env),
    // Renewed by the worker's heartbeat every third of it while a send is in flight, so it need not
    // outlive a send: it is how long a dead worker's deliveries wait. At least 3 s: the heartbeat
    // runs every second then, and a lease survives two missed beats.
    webhookLeaseSeconds: integer(env, 'WEBHOOK_LEASE_SECONDS', 10, 3, 3600),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    groth16LiveVerificationKey: groth16LiveVerificationKey(env),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', LOG_FORMATS, 'json'),
    accessLog: boolean(env, 'ACCESS_LOG', false),
    trustProxyRequestId: boolean(env, 'TRUST_PROXY_REQUEST_ID', false),
    corsOrigins: origins(env, 'CORS_ORIGINS'),
    role,
    metricsToken: operatorToken(env, 'METRICS_TOKEN'),
    ...(metricsPort === undefined ? {} : { metricsPort }),
    adminToken: operatorToken(env, 'ADMIN_TOKEN'),
    // One thread fewer than the cores, at least one: the event loop keeps a core of its own.
    proofWorkers: integer(env, 'PROOF_WORKERS', Math.max(1, availableParallelism() - 1), 0, 64),
    proofQueueMax: integer(env, 'PROOF_QUEUE_MAX', 32, 1, 10_000),
    rateLimits: {
      publicPerMinute: integer(env, 'RATE_LIMIT_PUBLIC_PER_MINUTE', 300, 0, 1_000_000),
      heavyPerMinute: integer(env, 'RATE_LIMIT_HEAVY_PER_MINUTE', 30, 0, 1_000_000),
      apiKeyPerMinute: integer(env, 'RATE_LIMIT_API_KEY_PER_MINUTE', 1200, 0, 1_000_000),
      sessionPerMinute: integer(env, 'RATE_LIMIT_SESSION_PER_MINUTE', 60, 0, 1_000_000),
    },
    trustProxy: trustProxy(env),
    resultRetentionDays: integer(env, 'RESULT_RETENTION_DAYS', DEFAULT_RESULT_RETENTION_DAYS, 1, 3650),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    jobs: jobsConfig(env),
    trust: trustConfig(env),
    openid4vp: openid4vpConfig(env),
    credentialProfiles: credentialProfiles(env),
    universityLogin: universityLoginConfig(env),
  };
}

function credentialProfiles(env: Env): CredentialProfile[] {
  const path = env.CREDENTIAL_PROFILES_FILE;
  if (path === undefined || path === '') return [];
  const read = readProfilesFile(path);
  if (!read.ok) throw new ConfigError('CREDENTIAL_PROFILES_FILE', read.problem);
  return read.profiles;
}
