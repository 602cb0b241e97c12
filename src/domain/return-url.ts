/**
 * Where the portal sends a student once their session ends (`returnUrl`), and who may frame the
 * portal (the drop-in's modal): both are limited to the origins an application allows
 * (`allowedReturnOrigins`), so that a session can never be made an open redirect or be framed by
 * a page that could dress it up. https only, unless private targets are allowed (development).
 */
export type UrlCheck = { ok: true; value: string } | { ok: false; message: string };

/** Longest `returnUrl` accepted. */
export const MAX_RETURN_URL_LENGTH = 2048;
/** Most origins an application may allow. */
export const MAX_ALLOWED_ORIGINS = 10;

function parsed(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

function schemeProblem(url: URL, allowHttp: boolean): string | undefined {
  if (url.protocol === 'https:' || (allowHttp && url.protocol === 'http:')) return undefined;
  return `${url.protocol}// is not allowed: use https://${allowHttp ? ' (or http://)' : ''}.`;
}

/** An origin as an application lists it: scheme, host and port only, normalized (`https://shop.example`). */
export function checkOrigin(value: string, allowHttp: boolean): UrlCheck {
  const url = parsed(value);
  if (!url || url.origin === 'null')
    return { ok: false, message: `"${value}" is not an origin such as https://shop.example.` };
  const scheme = schemeProblem(url, allowHttp);
  if (scheme) return { ok: false, message: scheme };
  if (url.username || url.password || url.pathname !== '/' || url.search || url.hash)
    return { ok: false, message: `"${value}" is not an origin: scheme, host and port only (https://shop.example).` };
  return { ok: true, value: url.origin };
}

/** A session's `returnUrl`: absolute, https (or http when allowed), no user info, at one of `allowed`. */
export function checkReturnUrl(value: string, allowed: readonly string[], allowHttp: boolean): UrlCheck {
  const url = parsed(value);
  if (!url || url.origin === 'null') return { ok: false, message: 'returnUrl must be an absolute URL.' };
  const scheme = schemeProblem(url, allowHttp);
  if (scheme) return { ok: false, message: `returnUrl: ${scheme}` };
  if (url.username || url.password) return { ok: false, message: 'returnUrl must not carry a user name or password.' };
  if (!allowed.includes(url.origin)) {
    return {
      ok: false,
      message:
        allowed.length === 0
          ? `The application allows no return origin: add ${url.origin} to its allowedReturnOrigins first.`
          : `${url.origin} is not one of the application's allowedReturnOrigins.`,
    };
  }
  return { ok: true, value: url.href };
}

/**
 * Where the student is sent: the `returnUrl` with `session=<id>` in its query. Never the result:
 * the business reads that from the API or a webhook, not from a URL a student could edit.
 */
export function returnAddress(returnUrl: string, sessionId: string): string {
  const url = new URL(returnUrl);
  url.searchParams.set('session', sessionId);
  return url.href;
}
