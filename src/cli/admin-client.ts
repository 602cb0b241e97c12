import { UsageError, type CliContext } from './command.ts';

/** An admin API to call instead of opening the database: `--admin-url` or MATRICULA_ADMIN_URL. */
export interface AdminTarget {
  url: string;
  token: string;
}

/** The option every command that can go through the admin API takes. */
export const ADMIN_URL_OPTION = { 'admin-url': { type: 'string' } } as const;

export const ADMIN_USAGE =
  "With --admin-url URL (or MATRICULA_ADMIN_URL) and MATRICULA_ADMIN_TOKEN, it calls that server's admin API\ninstead of opening DATABASE_URL.";

/** The admin API named by the flag or the environment, or undefined to use the database. */
export function adminTarget(values: Record<string, unknown>, ctx: CliContext): AdminTarget | undefined {
  const flag = values['admin-url'];
  const raw = typeof flag === 'string' && flag !== '' ? flag : ctx.env.MATRICULA_ADMIN_URL;
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--admin-url must be an http(s) URL (got "${raw}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--admin-url must be an http(s) URL (got "${raw}")`);
  const token = ctx.env.MATRICULA_ADMIN_TOKEN;
  if (!token) throw new UsageError("MATRICULA_ADMIN_TOKEN must be set to the server's ADMIN_TOKEN to use --admin-url");
  return { url: raw.replace(/\/+$/, ''), token };
}

interface ErrorBody {
  error?: { code?: string; message?: string };
}

/**
 * One admin API call; returns the envelope's body. A refusal the caller can fix (400, 404, 409) is
 * a usage error (exit 2), anything else (401, 429, 5xx, no answer) a failure (exit 1).
 */
export async function adminCall<T>(
  target: AdminTarget,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${target.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new Error(`cannot reach the admin API at ${target.url}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`the admin API answered ${response.status} without JSON`);
  }
  if (response.ok) return parsed as T;
  const error = (parsed as ErrorBody).error;
  const message = `${error?.message ?? `HTTP ${response.status}`}${error?.code ? ` (${error.code})` : ''}`;
  // A 404 on a path that names a resource (an issuer, a profile, an identity provider) is that resource missing.
  const namesResource =
    path.includes('/issuers/') || path.includes('/credential-profiles/') || path.includes('/identity-providers/');
  if (response.status === 404 && error?.code === 'not_found' && !namesResource)
    throw new Error(`${message}: is ADMIN_TOKEN set on the server?`);
  if ([400, 404, 409].includes(response.status)) throw new UsageError(message);
  throw new Error(`the admin API refused: ${message}`);
}
