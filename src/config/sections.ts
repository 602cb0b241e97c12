/**
 * The sections of the configuration (config.ts) that group one feature's settings: periodic jobs,
 * trust (issuer fetches, status lists, X.509), OpenID4VP, university login. Each section's type
 * beside its parser.
 */
import {
  DEFAULT_ALLOWED_EKUS,
  EXTENDED_KEY_USAGES,
  STATUS_LIST_POLICIES,
  type StatusListPolicy,
} from '../domain/credentials.ts';
import { ConfigError, integer, oneOf, readPemFile, type Env } from './values.ts';

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

export function jobsConfig(env: Env): JobsConfig {
  return {
    sessionExpirySeconds: integer(env, 'JOB_SESSION_EXPIRY_SECONDS', 5, 1, 3600),
    expiredRowsPurgeSeconds: integer(env, 'JOB_EXPIRED_ROWS_PURGE_SECONDS', 600, 10, 86_400),
    resultRetentionSeconds: integer(env, 'JOB_RESULT_RETENTION_SECONDS', 60, 10, 86_400),
    eventRetentionSeconds: integer(env, 'JOB_EVENT_RETENTION_SECONDS', 60, 10, 86_400),
    federationRefreshSeconds: integer(env, 'JOB_FEDERATION_REFRESH_SECONDS', 300, 10, 86_400),
  };
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

export function trustConfig(env: Env): TrustConfig {
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

export function openid4vpConfig(env: Env): Openid4vpConfig {
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

export function universityLoginConfig(env: Env): UniversityLoginConfig {
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
