import { request, type Dispatcher } from 'undici';
import { UsageError, type CliContext } from './command.ts';

/**
 * A small client of the HTTP API for the commands that work without database access (`listen`,
 * `events tail`, `webhooks test`): the key from `--api-key` or MATRICULA_API_KEY, the service from
 * {@link serviceBaseUrl}. Requests go through the dispatcher it is given (the SSRF guard's, see
 * listen.ts).
 */

/** How every command that talks to the service says where it looks for it. */
export const BASE_URL_DEFAULT = 'MATRICULA_BASE_URL, else BASE_URL, else http://localhost:8080';

/**
 * The service every CLI command talks to, the same way for all of them: the command's flag, else
 * MATRICULA_BASE_URL, else BASE_URL (the server's own setting, accepted so that a shell that starts
 * the service can run the CLI too), else http://localhost:8080. Without a trailing slash.
 */
export function serviceBaseUrl(flag: { name: string; value: unknown }, ctx: CliContext): string {
  const [source, raw] =
    typeof flag.value === 'string'
      ? [`--${flag.name}`, flag.value]
      : ctx.env.MATRICULA_BASE_URL
        ? ['MATRICULA_BASE_URL', ctx.env.MATRICULA_BASE_URL]
        : ctx.env.BASE_URL
          ? ['BASE_URL', ctx.env.BASE_URL]
          : ['the default', 'http://localhost:8080'];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`${source} is not a URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${source} must be http(s)`);
  return raw.replace(/\/+$/, '');
}

export const API_OPTIONS = {
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
} as const;

export const API_OPTIONS_HELP = [
  '  --api-key KEY           a secret API key, sk_test_… or sk_live_… (default: MATRICULA_API_KEY)',
  `  --base-url URL          the service (default: ${BASE_URL_DEFAULT})`,
].join('\n');

/** The service could not be reached, or answered 429 or 5xx: worth trying again later. */
export class ApiUnavailableError extends Error {}

/** The service answered with an error that trying again will not fix (401, 403, 404, 400…). */
export class ApiRequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

export interface ApiClient {
  readonly baseUrl: string;
  get<T>(path: string, query?: Record<string, string | undefined>): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
}

export function apiSettings(values: Record<string, unknown>, ctx: CliContext): { apiKey: string; baseUrl: string } {
  const apiKey = (values['api-key'] as string | undefined) ?? ctx.env.MATRICULA_API_KEY;
  if (!apiKey) throw new UsageError('an API key is required: --api-key or MATRICULA_API_KEY');
  if (!/^sk_(test|live)_/.test(apiKey))
    throw new UsageError('the API key must be a secret key, sk_test_… or sk_live_…');
  return { apiKey, baseUrl: serviceBaseUrl({ name: 'base-url', value: values['base-url'] }, ctx) };
}

export function createApiClient(options: { apiKey: string; baseUrl: string; dispatcher: Dispatcher }): ApiClient {
  const { apiKey, baseUrl, dispatcher } = options;
  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const url = `${baseUrl}${path}`;
    let status: number;
    let text: string;
    try {
      const response = await request(url, {
        method,
        dispatcher,
        headers: {
          authorization: `Bearer ${apiKey}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const detail = e?.code ?? e?.cause?.code ?? (err instanceof Error ? err.message : String(err));
      throw new ApiUnavailableError(`cannot reach ${baseUrl}: ${detail}`);
    }
    let json: { data?: unknown; error?: { code?: string; message?: string } } | undefined;
    try {
      json = JSON.parse(text) as typeof json;
    } catch {
      json = undefined;
    }
    if (status === 429 || status >= 500) {
      throw new ApiUnavailableError(
        `${method} ${path} answered ${status}${json?.error?.message ? `: ${json.error.message}` : ''}`,
      );
    }
    if (status < 200 || status >= 300 || json === undefined) {
      const message = json?.error?.message ?? `answered ${status} with a body that is not the API's JSON`;
      throw new ApiRequestError(`${method} ${path}: ${message}`, status, json?.error?.code);
    }
    return json as T;
  }
  return {
    baseUrl,
    get: (path, query = {}) => {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
      const qs = params.toString();
      return call('GET', qs ? `${path}?${qs}` : path);
    },
    post: (path, body) => call('POST', path, body),
  };
}
