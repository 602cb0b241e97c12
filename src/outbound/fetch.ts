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
