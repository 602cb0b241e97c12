/**
 * Reads a `qrPayload` (`{APP_SCHEME}://verify?session=<id>&nonce=<nonce>`, docs/security.md) back into
 * its parts, as a wallet does after scanning. Anything else, including another scheme, is
 * undefined: the sandbox wallet only answers this service's sessions.
 */
export function parseQrPayload(payload: string, appScheme: string): { sessionId: string; nonce: string } | undefined {
  let url: URL;
  try {
    url = new URL(payload.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== `${appScheme}:` || url.hostname !== 'verify' || url.pathname !== '') return undefined;
  const sessionId = url.searchParams.get('session');
  const nonce = url.searchParams.get('nonce');
  if (!sessionId || !nonce || sessionId.length > 64 || nonce.length > 128) return undefined;
  return { sessionId, nonce };
}
