import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { classifyAddress, isAllowedTarget, literalIp } from './address-ranges.ts';

/**
 * The SSRF guard for every outgoing request (docs/security.md): webhook deliveries, issuer
 * metadata, JWKS and status lists. Such a URL is chosen by a customer or an issuer and called from
 * inside our network, so it must never reach loopback, private, link-local or cloud metadata
 * addresses. Two checks, both needed:
 *
 * - up front (a webhook's registration), {@link checkTargetUrl} resolves the host and refuses the
 *   URL if any address is forbidden, so the customer learns at once why;
 * - at each request, {@link createGuardedDispatcher} resolves again, refuses, and connects to exactly
 *   the address it checked, so a name that resolved to a public address earlier and to 127.0.0.1
 *   now (DNS rebinding) is still refused.
 *
 * `allowPrivateTargets` (OUTBOUND_ALLOW_PRIVATE_TARGETS, alias WEBHOOK_ALLOW_PRIVATE_TARGETS; for
 * local development and tests) allows `http://` and every address class except cloud metadata,
 * which is never a legitimate target. The address classes themselves are in address-ranges.ts.
 */

/** A resolved address, as `dns.lookup(name, {all: true})` returns them. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses. Injectable so tests can point a name anywhere. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The operating system's resolver (getaddrinfo, honouring /etc/hosts), like any client would. */
export const systemResolver: HostResolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => {
      if (err) reject(err);
      else resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

export interface TargetPolicy {
  /** OUTBOUND_ALLOW_PRIVATE_TARGETS: allow http:// and non-public addresses (never metadata). */
  allowPrivateTargets: boolean;
  /** Defaults to {@link systemResolver}. */
  lookup?: HostResolver;
}

export const TARGET_URL_REFUSALS = [
  'invalid_url',
  'unsupported_scheme',
  'insecure_scheme',
  'credentials_in_url',
  'forbidden_address',
  'unresolvable_host',
] as const;
export type TargetUrlRefusal = (typeof TARGET_URL_REFUSALS)[number];

/** The outcome of a URL check: the normalized URL, or why it is refused (a value, not a throw). */
export type TargetUrlCheck = { ok: true; url: URL } | TargetUrlRefused;
export type TargetUrlRefused = { ok: false; reason: TargetUrlRefusal; message: string };

const MAX_URL_LENGTH = 2048;

/**
 * The checks that need no network: URL syntax, scheme, credentials, fragment, and a literal IP
 * host. The delivery worker can re-run it before each send at no cost (the policy may have changed
 * since registration).
 */
export function checkTargetUrlShape(input: string, policy: Pick<TargetPolicy, 'allowPrivateTargets'>): TargetUrlCheck {
  if (input.length > MAX_URL_LENGTH)
    return refuse('invalid_url', `The URL is longer than ${MAX_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return refuse('invalid_url', 'The URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return refuse('unsupported_scheme', `The scheme ${url.protocol} is not supported; use https://.`);
  }
  if (url.protocol === 'http:' && !policy.allowPrivateTargets) {
    return refuse('insecure_scheme', 'The URL must use https://.');
  }
  if (url.username !== '' || url.password !== '') {
    // Credentials in a URL end up in logs and dashboards; the signature authenticates us instead.
    return refuse('credentials_in_url', 'The URL must not contain a user name or password.');
  }
  if (url.hash !== '') {
    return refuse('invalid_url', 'The URL must not contain a #fragment (it is never sent).');
  }
  const literal = literalIp(url.hostname);
  if (literal !== null) {
    const refusal = refusalFor(literal, [literal], policy.allowPrivateTargets);
    if (refusal) return refusal;
  }
  return { ok: true, url };
}

/**
 * Registration-time check of a webhook URL: {@link checkTargetUrlShape}, then, for a host name,
 * resolution and a check of every address it resolves to. One forbidden address refuses the URL,
 * since the connection could be made to any of them.
 */
export async function checkTargetUrl(input: string, policy: TargetPolicy): Promise<TargetUrlCheck> {
  const shape = checkTargetUrlShape(input, policy);
  if (!shape.ok || literalIp(shape.url.hostname) !== null) return shape;
  // With private targets allowed only metadata is forbidden, and names for it are resolved and
  // refused at connect time by the dispatcher; development host names need not resolve here.
  if (policy.allowPrivateTargets) return shape;
  const hostname = shape.url.hostname;
  let addresses: ResolvedAddress[];
  try {
    addresses = await (policy.lookup ?? systemResolver)(hostname);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return refuse('unresolvable_host', `${hostname} does not resolve (${code}).`);
  }
  if (addresses.length === 0) return refuse('unresolvable_host', `${hostname} resolves to no address.`);
  const refusal = refusalFor(
    hostname,
    addresses.map((a) => a.address),
    false,
  );
  return refusal ?? shape;
}

/** Thrown inside the connector when a target is refused; the webhook sender records it as `ssrf_refused`. */
export class OutboundTargetRefusedError extends Error {
  readonly code = 'ERR_OUTBOUND_TARGET_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'OutboundTargetRefusedError';
  }
}

export interface GuardedDispatcherOptions extends TargetPolicy {
  /** Time allowed to open the TCP/TLS connection, in ms (undici's default is 10 s). */
  connectTimeoutMs?: number;
}

/**
 * An undici dispatcher for outgoing requests that refuses forbidden targets at connect time and
 * connects to the very address it checked (net.connect uses our lookup's answer, it does not
 * resolve again). Literal IP hosts, which net.connect never looks up, are checked before
 * connecting. Refusals fail the request with a {@link OutboundTargetRefusedError}.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions): Agent {
  const resolver = options.lookup ?? systemResolver;
  const lookup = guardedLookup(resolver, options.allowPrivateTargets);
  const connectTcpOrTls = buildConnector({ lookup, timeout: options.connectTimeoutMs });
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const literal = literalIp(connectOptions.hostname);
    if (literal !== null) {
      const refusal = refusalFor(literal, [literal], options.allowPrivateTargets);
      if (refusal) {
        callback(new OutboundTargetRefusedError(refusal.message), null);
        return;
      }
    }
    connectTcpOrTls(connectOptions, callback);
  };
  return new Agent({ connect });
}

/** A net.connect `lookup` that resolves with `resolver` and refuses forbidden answers. */
function guardedLookup(resolver: HostResolver, allowPrivateTargets: boolean): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    resolver(hostname).then(
      (resolved) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const addresses = family ? resolved.filter((a) => a.family === family) : resolved;
        if (addresses.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = 'ENOTFOUND';
          callback(err, '', 0);
          return;
        }
        const refusal = refusalFor(
          hostname,
          addresses.map((a) => a.address),
          allowPrivateTargets,
        );
        if (refusal) {
          callback(new OutboundTargetRefusedError(refusal.message), '', 0);
          return;
        }
        if (options.all) callback(null, addresses as LookupAddress[]);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

/** The refusal for the first forbidden address among `addresses` of `host`, if any. */
function refusalFor(host: string, addresses: string[], allowPrivateTargets: boolean): TargetUrlRefused | null {
  for (const address of addresses) {
    const classification = classifyAddress(address);
    if (classification === null) {
      return refuse('forbidden_address', `${host} resolves to ${address}, which is not an IP address.`);
    }
    if (!isAllowedTarget(classification, allowPrivateTargets)) {
      const subject = host === address ? `${address} is` : `${host} resolves to ${address},`;
      return refuse(
        'forbidden_address',
        `${subject} ${classification.description}; only public addresses may be reached.`,
      );
    }
  }
  return null;
}

function refuse(reason: TargetUrlRefusal, message: string): TargetUrlRefused {
  return { ok: false, reason, message };
}
