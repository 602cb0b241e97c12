/**
 * Cookies, read and written by hand: the portal's same-device binding is the only cookie the
 * service sets, so a plug-in would be more code than this.
 */

/** The value of cookie `name` in a Cookie header, if it is there. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

export interface CookieToSet {
  name: string;
  value: string;
  path: string;
  maxAgeSeconds: number;
  secure: boolean;
}

/**
 * A Set-Cookie value: always HttpOnly (no script reads it) and SameSite=Lax, which a top-level
 * navigation from another app (a wallet opening the portal again) still carries, and a cross-site
 * request from a page does not. Secure whenever the site is served over https.
 */
export function serializeCookie(cookie: CookieToSet): string {
  return [
    `${cookie.name}=${cookie.value}`,
    `Path=${cookie.path}`,
    `Max-Age=${cookie.maxAgeSeconds}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(cookie.secure ? ['Secure'] : []),
  ].join('; ');
}
