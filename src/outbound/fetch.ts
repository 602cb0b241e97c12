import { request, type Dispatcher } from 'undici';
import type { Clock } from '../domain/clock.ts';
import type { Fetched } from '../domain/credentials.ts';
import { checkTargetUrlShape } from './ssrf.ts';

/**
 * One GET of something an issuer publishes, through the SSRF guard of ssrf.ts (public addresses only
 * unless the private-targets flag is set; the address checked is the one connected to), with a
 * timeout on the service clock and a size limit past which the connection is dropped. Redirects
 * are not followed: the guard never saw where they lead. Never throws.
 */

export interface FetchPolicy {
  dispatcher: Dispatcher;
  allowPrivateTargets: boolean;
  clock: Clock;
  timeoutMs: number;
  maxBytes: number;
}

export interface FetchedDocument {
  body: string;
  /** `max-age` of Cache-Control, seconds; undefined without one, 0 for no-store/no-cache. */
  maxAgeSeconds?: number;
}

class FetchTimeout extends Error {}
class TooLarge extends Error {}

function maxAge(cacheControl: string | string[] | undefined): number | undefined {
  const value = Array.isArray(cacheControl) ? cacheControl.join(',') : cacheControl;
  if (!value) return undefined;
  if (/(^|,)\s*(no-store|no-cache)\s*(,|$)/i.test(value)) return 0;
  const match = /(^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(value);
  return match ? Number(match[2]) : undefined;
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new TooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export async function fetchPublished(
  url: string,
  accept: string,
  policy: FetchPolicy,
): Promise<Fetched<FetchedDocument>> {
  const shape = checkTargetUrlShape(url, { allowPrivateTargets: policy.allowPrivateTargets });
  if (!shape.ok) return { ok: false, message: `${url} is refused: ${shape.message}` };
  const controller = new AbortController();
  const timer = policy.clock.setTimeout(() => controller.abort(new FetchTimeout()), policy.timeoutMs);
  try {
    const response = await request(shape.url, {
      method: 'GET',
      headers: { accept },
      dispatcher: policy.dispatcher,
      signal: controller.signal,
    });
    if (response.statusCode !== 200) {
      await response.body.dump({ limit: 4096 }).catch(() => undefined);
      return { ok: false, message: `${url} answered HTTP ${response.statusCode}` };
    }
    const body = await readCapped(response.body, policy.maxBytes);
    return {
      ok: true,
      value: { body: body.toString('utf8'), maxAgeSeconds: maxAge(response.headers['cache-control']) },
    };
  } catch (err) {
    if (controller.signal.aborted) return { ok: false, message: `${url} did not answer within ${policy.timeoutMs} ms` };
    if (err instanceof TooLarge) return { ok: false, message: `${url} sent more than ${policy.maxBytes} bytes` };
    const code = (err as NodeJS.ErrnoException).code;
    const detail = err instanceof Error ? err.message : String(err);
    return { ok: false, message: `${url} could not be reached (${code ? `${code}: ` : ''}${detail})` };
  } finally {
    policy.clock.clearTimeout(timer);
  }
}

/**
 * A `fetch` for libraries that take one (openid-client's `customFetch`): every request through
 * the SSRF guard of ssrf.ts, redirects not followed, a timeout on the service clock and a size
 * limit on the answer. It answers a standard `Response` (the library checks for one) and throws,
 * as fetch does, when the target is refused or does not answer in time.
 */
export function guardedFetch(policy: FetchPolicy): (url: string, init?: RequestInit) => Promise<Response> {
  return async (url, init = {}) => {
    const shape = checkTargetUrlShape(url, { allowPrivateTargets: policy.allowPrivateTargets });
    if (!shape.ok) throw new TypeError(`${url} is refused: ${shape.message}`);
    const controller = new AbortController();
    const timer = policy.clock.setTimeout(() => controller.abort(new FetchTimeout()), policy.timeoutMs);
    try {
      const headers: Record<string, string> = {};
      new Headers(init.headers).forEach((value, key) => (headers[key] = value));
      const response = await request(shape.url, {
        method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
        headers,
        body: typeof init.body === 'string' || init.body instanceof URLSearchParams ? String(init.body) : undefined,
        dispatcher: policy.dispatcher,
        signal: controller.signal,
      });
      const body = await readCapped(response.body, policy.maxBytes);
      const answered = new Headers();
      for (const [key, value] of Object.entries(response.headers))
        if (value !== undefined) for (const v of Array.isArray(value) ? value : [value]) answered.append(key, v);
      const nullBody = response.statusCode === 204 || response.statusCode === 304;
      return new Response(nullBody ? null : new Uint8Array(body), { status: response.statusCode, headers: answered });
    } catch (err) {
      if (controller.signal.aborted) throw new TypeError(`${url} did not answer within ${policy.timeoutMs} ms`);
      if (err instanceof TooLarge) throw new TypeError(`${url} sent more than ${policy.maxBytes} bytes`);
      throw err;
    } finally {
      policy.clock.clearTimeout(timer);
    }
  };
}
