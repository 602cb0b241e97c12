/**
 * Configuration: one schema, parsed once at start, failing fast with one line that names the
 * variable. Everything else receives the parsed {@link Config}; nothing reads process.env.
 */
import { DEFAULT_RETRY_SCHEDULE_SECONDS, parseRetrySchedule, RetryScheduleError } from './domain/backoff.ts';
import { loadLiveVerificationKey, VerificationKeyError } from './proofs/groth16/verification-key.ts';

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
  webhookAllowPrivateTargets: boolean;
  /** Seconds between delivery attempts; the last entry is the final retry. */
  webhookRetrySchedule: readonly number[];
  /** How long a worker holds a claimed delivery before another worker may take it over. */
  webhookLeaseSeconds: number;
  /** Largest accepted request body, bytes. */
  bodyLimitBytes: number;
  /** Path of the Groth16 verification key from the operator's ceremony; without it live groth16 is refused. */
  groth16LiveVerificationKey?: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `json` lines (default) or `pretty`, human-readable, for development. */
  logFormat: 'json' | 'pretty';
  /** Keep a valid incoming X-Request-Id (set by a trusted proxy) instead of generating one. */
  trustProxyRequestId: boolean;
  /** Browser origins allowed to call the public endpoints (session status, wallet); none by default. */
  corsOrigins: readonly string[];
  role: Role;
  /** Bearer token GET /metrics requires; unset, the metrics are open. */
  metricsToken?: string;
  /** Bearer token of the admin API (/admin/v1); unset, the admin API is off (404). */
  adminToken?: string;
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

/** Parses the environment (and the `--role` flag) into a {@link Config}, or throws {@link ConfigError}. */
export function loadConfig(env: Env = process.env, argv: string[] = []): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '0.0.0.0';
  const baseUrl = httpUrl(env, 'BASE_URL', `http://localhost:${port}`);
  const portalUrl = httpUrl(env, 'PORTAL_URL', baseUrl);
  const appScheme = env.APP_SCHEME || 'matricula';
  if (!/^[a-z][a-z0-9+.-]*$/.test(appScheme))
    throw new ConfigError('APP_SCHEME', `must be a URI scheme such as "matricula" (got "${appScheme}")`);
  const roleFlag =
    argv.find((arg) => arg.startsWith('--role='))?.slice('--role='.length) ??
    (argv.includes('--role') ? argv[argv.indexOf('--role') + 1] : undefined);
  const role = oneOf({ ROLE: roleFlag ?? env.ROLE }, 'ROLE', ROLES, 'all');
  return {
    port,
    host,
    baseUrl,
    portalUrl,
    appScheme,
    databaseUrl: databaseUrl(env),
    webhookAllowPrivateTargets: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    webhookRetrySchedule: retrySchedule(env),
    // At least 15 s: a lease must outlive one send (10 s timeout) and the recording of its outcome.
    webhookLeaseSeconds: integer(env, 'WEBHOOK_LEASE_SECONDS', 60, 15, 3600),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    groth16LiveVerificationKey: groth16LiveVerificationKey(env),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', LOG_FORMATS, 'json'),
    trustProxyRequestId: boolean(env, 'TRUST_PROXY_REQUEST_ID', false),
    corsOrigins: origins(env, 'CORS_ORIGINS'),
    role,
    metricsToken: operatorToken(env, 'METRICS_TOKEN'),
    adminToken: operatorToken(env, 'ADMIN_TOKEN'),
  };
}
