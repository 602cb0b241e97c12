import { decodeJsonSegment, isJsonObject } from '../sd-jwt-vc/jose.ts';

/**
 * The two DID methods `jwt_vc_json` resolves (docs/credential-profiles.md). `did:jwk` carries its
 * key in the identifier: nothing is fetched. `did:web` names a DID document on a web server, which
 * is fetched only through the issuer publications (the outbound SSRF guard, a timeout, a size
 * limit, a cache). Other methods (did:ebsi, did:key, …) are not resolved.
 */

/** The public JWK of a `did:jwk` (a DID URL's fragment is ignored); undefined when it is not one. */
export function didJwkKey(did: unknown): Record<string, unknown> | undefined {
  if (typeof did !== 'string' || !did.startsWith('did:jwk:')) return undefined;
  const encoded = did.slice('did:jwk:'.length).split('#')[0]!;
  const jwk = decodeJsonSegment(encoded);
  if (!isJsonObject(jwk) || typeof jwk.kty !== 'string' || jwk.d !== undefined) return undefined;
  return jwk;
}

/** Whether two public JWKs are the same key (their key members, nothing else). */
export function sameKey(a: unknown, b: unknown): boolean {
  if (!isJsonObject(a) || !isJsonObject(b)) return false;
  return ['kty', 'crv', 'x', 'y', 'n', 'e'].every((member) => a[member] === b[member]);
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The URL of a `did:web` DID document (docs/credential-profiles.md): `did:web:host` is
 * `https://host/.well-known/did.json`, `did:web:host:a:b` is `https://host/a/b/did.json`, a port
 * is percent-encoded (`%3A`). `allowLoopbackHttp` (OUTBOUND_ALLOW_PRIVATE_TARGETS, development and
 * tests) reads a loopback host over http. Undefined for anything else.
 */
export function didWebUrl(did: string, options: { allowLoopbackHttp?: boolean } = {}): string | undefined {
  if (!/^did:web:[A-Za-z0-9.%:_~-]+$/.test(did) || did.length > 2048) return undefined;
  const [hostPart, ...pathParts] = did.slice('did:web:'.length).split(':');
  let host: string;
  let path: string[];
  try {
    host = decodeURIComponent(hostPart!);
    path = pathParts.map((part) => decodeURIComponent(part));
  } catch {
    return undefined;
  }
  if (host === '' || /[/?#@\s]/.test(host) || path.some((p) => p === '' || /[/?#\s]/.test(p) || p === '..'))
    return undefined;
  const hostname = host.replace(/:\d+$/, '');
  const scheme = options.allowLoopbackHttp && LOOPBACK.has(hostname) ? 'http' : 'https';
  try {
    const url = new URL(`${scheme}://${host}/${path.length ? path.join('/') : '.well-known'}/did.json`);
    return url.hostname === '' ? undefined : url.toString();
  } catch {
    return undefined;
  }
}

/**
 * The keys a DID document lets sign credentials: its verification methods with a `publicKeyJwk`
 * that `assertionMethod` names (all of them when it has no `assertionMethod`), each JWK's `kid`
 * set to the method's absolute id (`did:web:host#key-1`), which is what a JWT header's `kid` names.
 * A message when the document is not the DID's.
 */
export function didDocumentKeys(did: string, document: unknown): JsonWebKey[] | string {
  if (!isJsonObject(document)) return 'the DID document is not a JSON object';
  if (document.id !== did) return `the DID document's id is ${JSON.stringify(document.id)}, not ${did}`;
  const absolute = (id: unknown) => (typeof id === 'string' ? (id.startsWith('#') ? `${did}${id}` : id) : undefined);
  const methods: unknown[] = Array.isArray(document.verificationMethod) ? document.verificationMethod : [];
  const assertion: unknown[] | undefined = Array.isArray(document.assertionMethod)
    ? document.assertionMethod
    : undefined;
  const embedded = (assertion ?? []).filter(isJsonObject);
  const named = new Set((assertion ?? []).map((entry) => absolute(entry)).filter((id) => id !== undefined));
  const keys: JsonWebKey[] = [];
  for (const method of [...methods, ...embedded]) {
    if (!isJsonObject(method) || !isJsonObject(method.publicKeyJwk)) continue;
    const id = absolute(method.id);
    if (id === undefined || !id.startsWith(`${did}#`)) continue;
    if (assertion !== undefined && !named.has(id) && !embedded.includes(method)) continue;
    const { kty, crv, x, y } = method.publicKeyJwk;
    keys.push({ kty, crv, x, y, kid: id } as JsonWebKey);
  }
  return keys;
}
