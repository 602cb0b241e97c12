/**
 * Configuration: one schema, parsed once at start, failing fast with one line that names the
 * variable. Everything else receives the parsed {@link Config}; nothing reads process.env.
 */
import { availableParallelism } from 'node:os';
import { DEFAULT_RETRY_SCHEDULE_SECONDS, parseRetrySchedule, RetryScheduleError } from './domain/backoff.ts';
import { DEFAULT_RESULT_RETENTION_DAYS } from './domain/redaction.ts';
import { loadLiveVerificationKey, VerificationKeyError } from './proofs/groth16/verification-key.ts';
import { parseServerArgs, ServerArgsError } from './server-args.ts';
import type { CredentialProfile } from './domain/credential-profiles.ts';
import { readProfilesFile } from './profiles-file.ts';
import {
  jobsConfig,
  openid4vpConfig,
  trustConfig,
  universityLoginConfig,
  type JobsConfig,
  type Openid4vpConfig,
  type TrustConfig,
  type UniversityLoginConfig,
} from './config/sections.ts';
import { boolean, ConfigError, httpUrl, integer, oneOf, operatorToken, origins, type Env } from './config/values.ts';

export { ConfigError } from './config/values.ts';
export type { JobsConfig, Openid4vpConfig, TrustConfig, UniversityLoginConfig } from './config/sections.ts';

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

export const DEFAULT_RETRY_SCHEDULE = DEFAULT_RETRY_SCHEDULE_SECONDS;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const ROLES = ['api', 'worker', 'all'] as const;
const LOG_FORMATS = ['json', 'pretty'] as const;

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
