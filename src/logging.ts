/**
 * The process's logger: pino, JSON lines by default, human-readable with LOG_FORMAT=pretty.
 * Every line passes {@link redactSecrets} on its way out, whatever logged it (a route, Fastify, the
 * worker, a library's error message): wallet nonces and OpenID4VP request tokens and response codes
 * authorize a wallet and API keys, webhook
 * secrets and bearer tokens authorize everything else, so none of them may reach a log. Nor may
 * the value of a query parameter whose name says it is a credential (`?access_token=`, `?key=`,
 * …), whoever sent it and wherever the URL is quoted.
 */
import { pino, stdSerializers, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.ts';

export type LogFormat = 'json' | 'pretty';

const REDACTED = '[redacted]';

/**
 * Query parameters whose value is a credential, by name, compared without case: ours (`nonce`,
 * OpenID4VP's `token` and `response_code`) and those clients, OAuth, OpenID Connect and SAML put
 * in URLs. The service reads no credential from a query string (operator and API keys come only
 * in `Authorization`), but a client that sends one there still must not leave it in a log.
 */
const CREDENTIAL_PARAMETERS: readonly string[] = [
  'access_token',
  'api_key',
  'apikey',
  'key',
  'secret',
  'password',
  'client_secret',
  'code',
  'token',
  'response_code',
  'nonce',
  'SAMLResponse',
  'id_token',
];
const CREDENTIAL_NAMES = new Set(CREDENTIAL_PARAMETERS.map((name) => name.toLowerCase()));

/** Whether a query parameter's name, as written (perhaps percent-encoded), is a credential's. */
function isCredentialParameter(name: string): boolean {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // Not valid percent-encoding: compare the name as written.
  }
  return CREDENTIAL_NAMES.has(decoded.toLowerCase());
}

/** `text` with the value of every `name=value` that `parameter` finds replaced when the name is a credential's. */
function redactCredentialParameters(text: string, parameter: RegExp): string {
  return text.replace(parameter, (match, separator: string, name: string) =>
    isCredentialParameter(name) ? `${separator}${name}=${REDACTED}` : match,
  );
}

/** A parameter inside a line: the name and value stop at `"` and `\` (the end of a JSON string). */
const PARAMETER_IN_LINE = /([?&#])([^=&#?\s"\\]+)=[^&#\s"\\]*/g;
/** A parameter of a request's URL, as the server received it. */
const PARAMETER_IN_URL = /([?&])([^=&#?]+)=[^&#]*/g;
/** The credential names as a regular expression alternation (they are plain words). */
const CREDENTIAL_ALTERNATION = CREDENTIAL_PARAMETERS.join('|');

/**
 * Secret shapes, replaced wherever they occur in a serialized line. The patterns stop at `"` and
 * `\` so a match never runs past the end of a JSON string.
 */
const SECRET_PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  // Secret API keys (domain/api-key-format.ts); the prefix stays, it says which environment.
  [/\bsk_(test|live)_[0-9A-Za-z]+/g, `sk_$1_${REDACTED}`],
  // Webhook signing secrets (webhooks/secrets.ts).
  [/\bwhsec_[0-9A-Za-z]+/g, `whsec_${REDACTED}`],
  // Session challenge nonces (`nonce_` + 43 base64url characters); error codes such as
  // `nonce_mismatch` are too short to match.
  [/\bnonce_[0-9A-Za-z_-]{16,}/g, `nonce_${REDACTED}`],
  // A credential-like parameter inside a URL-encoded URL: the request_uri of an openid4vpUri
  // (`%3Ftoken%3D…`), a redirect a library quotes. (Plain query strings: redactSecrets.)
  [new RegExp(`(%3F|%26)(${CREDENTIAL_ALTERNATION})%3D(?:(?!%26|%23)[^&#\\s"\\\\])*`, 'gi'), `$1$2%3D${REDACTED}`],
  // Authorization header values: Bearer (API keys, admin and metrics tokens) and Basic.
  [/\b(Bearer|Basic)\s+[^\s"\\]+/gi, `$1 ${REDACTED}`],
];

/**
 * `text` with every nonce, API key, webhook secret and bearer token replaced by a marker, and the
 * value of every credential-like query parameter (in a query string or a qrPayload, whatever the
 * value's shape).
 */
export function redactSecrets(text: string): string {
  let out = redactCredentialParameters(text, PARAMETER_IN_LINE);
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/** A URL as logged: the values of credential-like query parameters removed, whatever their shape. */
export function loggableUrl(url: string): string {
  return url.includes('=') ? redactCredentialParameters(url, PARAMETER_IN_URL) : url;
}

/**
 * Field names whose values are secrets wherever they appear in a logged object: a second line of
 * defence in front of the pattern scan, which catches values of shapes it does not know.
 */
const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-service-signature"]',
  'headers.authorization',
  'headers.cookie',
  'authorization',
  'nonce',
  'secret',
  'rawSecret',
  'challengeNonce',
  'token',
  '*.authorization',
  '*.nonce',
  '*.secret',
  '*.rawSecret',
  '*.challengeNonce',
  '*.token',
];

interface LoggedRequest {
  id?: unknown;
  method?: string;
  url?: string;
  ip?: string;
}

/** What a request contributes to a log line: method, path (nonce stripped), remote address. Never headers. */
function serializeRequest(request: LoggedRequest) {
  return { method: request.method, url: loggableUrl(request.url ?? ''), remoteAddress: request.ip };
}

export interface LoggerSettings {
  logLevel: Config['logLevel'];
  logFormat: LogFormat;
}

/** pino options every logger of the process shares: level, redaction, serializers. */
export function loggerOptions(settings: Pick<LoggerSettings, 'logLevel'>): LoggerOptions {
  return {
    level: settings.logLevel,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    serializers: { req: serializeRequest, err: stdSerializers.err },
    hooks: { streamWrite: redactSecrets },
  };
}

/**
 * The logger of the process. `destination` replaces standard output (tests capture lines); with
 * LOG_FORMAT=pretty lines are formatted in-process by pino-pretty, after redaction.
 */
export function createLogger(settings: LoggerSettings, destination?: DestinationStream): Logger {
  const options = loggerOptions(settings);
  if (settings.logFormat === 'pretty') {
    return pino(
      options,
      pretty({
        destination: destination ?? 1,
        colorize: destination === undefined && process.stdout.isTTY === true,
        sync: true,
      }),
    );
  }
  return destination ? pino(options, destination) : pino(options);
}

/** Logged once at start: settings that are fine for development and dangerous in production. */
export function logStartupWarnings(
  log: Pick<Logger, 'warn' | 'error'>,
  config: Pick<Config, 'outboundAllowPrivateTargets' | 'role' | 'openid4vp'>,
): void {
  if (config.outboundAllowPrivateTargets)
    log.warn(
      { setting: 'OUTBOUND_ALLOW_PRIVATE_TARGETS' },
      'OUTBOUND_ALLOW_PRIVATE_TARGETS=true (or WEBHOOK_ALLOW_PRIVATE_TARGETS): webhooks, issuer metadata and ' +
        'status lists may be fetched over http:// and from private or loopback addresses; ' +
        'use this for local development only',
    );
  // Only API processes sign request objects, and only under x509_* prefixes (redirect_uri is unsigned).
  if (
    config.role !== 'worker' &&
    config.openid4vp.clientIdPrefix !== 'redirect_uri' &&
    config.openid4vp.signingKeyPem === undefined
  )
    log.error(
      { setting: 'OPENID4VP_SIGNING_KEY_FILE' },
      'OPENID4VP_SIGNING_KEY_FILE is not set: OpenID4VP request objects, of live sessions too, are signed ' +
        'with the self-signed sandbox certificate, which HAIP wallets refuse and other wallets trust only when ' +
        'pinned; set it and OPENID4VP_CERTIFICATE_CHAIN_FILE to a certificate your wallets trust before going live',
    );
}
