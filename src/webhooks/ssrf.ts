import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';

/**
 * The SSRF guard for webhook targets (DESIGN §6). A webhook URL is chosen by a customer and called
 * from inside our network, so it must never reach loopback, private, link-local or cloud metadata
 * addresses. Two checks, both needed:
 *
 * - at registration, {@link checkWebhookUrl} resolves the host and refuses the URL if any address
 *   is forbidden, so the customer learns at once why;
 * - at delivery, {@link createGuardedDispatcher} resolves again, refuses, and connects to exactly the
 *   address it checked, so a name that resolved to a public address at registration and to
 *   127.0.0.1 now (DNS rebinding) is still refused.
 *
 * `allowPrivateTargets` (WEBHOOK_ALLOW_PRIVATE_TARGETS, for local development and tests) allows
 * `http://` and every address class except cloud metadata, which is never a webhook receiver.
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
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: allow http:// and non-public addresses (never metadata). */
  allowPrivateTargets: boolean;
  /** Defaults to {@link systemResolver}. */
  lookup?: HostResolver;
}

export type WebhookUrlRefusal =
  | 'invalid_url'
  | 'unsupported_scheme'
  | 'insecure_scheme'
  | 'credentials_in_url'
  | 'forbidden_address'
  | 'unresolvable_host';

/** The outcome of a URL check: the normalized URL, or why it is refused (a value, not a throw). */
export type WebhookUrlCheck = { ok: true; url: URL } | WebhookUrlRefused;
export type WebhookUrlRefused = { ok: false; reason: WebhookUrlRefusal; message: string };

const MAX_URL_LENGTH = 2048;

/** True when an address of this class may be called under the policy. */
export function isAllowedTarget(classification: AddressClassification, allowPrivateTargets: boolean): boolean {
  if (classification.category === 'public') return true;
  return allowPrivateTargets && classification.category !== 'metadata';
}

/**
 * The checks that need no network: URL syntax, scheme, credentials, fragment, and a literal IP
 * host. The delivery worker can re-run it before each send at no cost (the policy may have changed
 * since registration).
 */
export function checkWebhookUrlShape(
  input: string,
  policy: Pick<TargetPolicy, 'allowPrivateTargets'>,
): WebhookUrlCheck {
  if (input.length > MAX_URL_LENGTH)
    return refuse('invalid_url', `The URL is longer than ${MAX_URL_LENGTH} characters.`);
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return refuse('invalid_url', 'The webhook URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return refuse('unsupported_scheme', `The scheme ${url.protocol} is not supported; use https://.`);
  }
  if (url.protocol === 'http:' && !policy.allowPrivateTargets) {
    return refuse('insecure_scheme', 'Webhook URLs must use https://.');
  }
  if (url.username !== '' || url.password !== '') {
    // Credentials in a URL end up in logs and dashboards; the signature authenticates us instead.
    return refuse('credentials_in_url', 'The webhook URL must not contain a user name or password.');
  }
  if (url.hash !== '') {
    return refuse('invalid_url', 'The webhook URL must not contain a #fragment (it is never sent).');
  }
  const literal = literalIp(url.hostname);
  if (literal !== null) {
    const refusal = refusalFor(literal, [literal], policy.allowPrivateTargets);
    if (refusal) return refusal;
  }
  return { ok: true, url };
}

/**
 * Registration-time check of a webhook URL: {@link checkWebhookUrlShape}, then, for a host name,
 * resolution and a check of every address it resolves to. One forbidden address refuses the URL,
 * since the connection could be made to any of them.
 */
export async function checkWebhookUrl(input: string, policy: TargetPolicy): Promise<WebhookUrlCheck> {
  const shape = checkWebhookUrlShape(input, policy);
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

/** Thrown inside the connector when a target is refused; the sender turns it into `ssrf_refused`. */
export class WebhookTargetRefusedError extends Error {
  readonly code = 'ERR_WEBHOOK_TARGET_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'WebhookTargetRefusedError';
  }
}

export interface GuardedDispatcherOptions extends TargetPolicy {
  /** Time allowed to open the TCP/TLS connection, in ms (undici's default is 10 s). */
  connectTimeoutMs?: number;
}

/**
 * An undici dispatcher for webhook deliveries that refuses forbidden targets at connect time and
 * connects to the very address it checked (net.connect uses our lookup's answer, it does not
 * resolve again). Literal IP hosts, which net.connect never looks up, are checked before
 * connecting. Refusals fail the request with a {@link WebhookTargetRefusedError}.
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
        callback(new WebhookTargetRefusedError(refusal.message), null);
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
          callback(new WebhookTargetRefusedError(refusal.message), '', 0);
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
function refusalFor(host: string, addresses: string[], allowPrivateTargets: boolean): WebhookUrlRefused | null {
  for (const address of addresses) {
    const classification = classifyAddress(address);
    if (classification === null) {
      return refuse('forbidden_address', `${host} resolves to ${address}, which is not an IP address.`);
    }
    if (!isAllowedTarget(classification, allowPrivateTargets)) {
      const subject = host === address ? `${address} is` : `${host} resolves to ${address},`;
      return refuse(
        'forbidden_address',
        `${subject} ${classification.description}; webhooks must target public addresses.`,
      );
    }
  }
  return null;
}

/** The IP address a URL host or connect host names literally (IPv6 without brackets), else null. */
function literalIp(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}

function refuse(reason: WebhookUrlRefusal, message: string): WebhookUrlRefused {
  return { ok: false, reason, message };
}

// ---------------------------------------------------------------------------------------------
// Address classification. Own code rather than net.BlockList because we need the class of an
// address (for the message) and must look inside IPv6 forms that embed an IPv4 address.

/** The class of an IP address; only `public` is a webhook target by default. */
export type AddressCategory =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link_local'
  | 'unique_local'
  | 'metadata'
  | 'multicast'
  | 'broadcast'
  | 'reserved';

export interface AddressClassification {
  category: AddressCategory;
  /** For messages: "a loopback address". */
  description: string;
}

const DESCRIPTIONS: Record<AddressCategory, string> = {
  public: 'a public address',
  unspecified: 'an unspecified ("this network") address',
  loopback: 'a loopback address',
  private: 'a private network address',
  shared: 'a carrier-grade NAT (shared) address',
  link_local: 'a link-local address',
  unique_local: 'a unique-local (private IPv6) address',
  metadata: 'a cloud metadata service address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved, documentation or non-routable address',
};

interface Range {
  bytes: Uint8Array;
  prefix: number;
  category: AddressCategory;
}

/** Most specific first: the first match wins (metadata inside link-local and unique-local). */
const IPV4_RANGES = ranges([
  ['169.254.169.254/32', 'metadata'], // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
  ['169.254.170.2/32', 'metadata'], // AWS ECS task metadata
  ['100.100.100.200/32', 'metadata'], // Alibaba Cloud
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments
  ['192.0.2.0/24', 'reserved'], // TEST-NET-1
  ['192.88.99.0/24', 'reserved'], // deprecated 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'], // benchmarking
  ['198.51.100.0/24', 'reserved'], // TEST-NET-2
  ['203.0.113.0/24', 'reserved'], // TEST-NET-3
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
]);

const IPV6_RANGES = ranges([
  ['fd00:ec2::254/128', 'metadata'], // AWS over IPv6
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fc00::/7', 'unique_local'],
  ['fe80::/10', 'link_local'],
  ['ff00::/8', 'multicast'],
  ['2001::/23', 'reserved'], // IETF protocol assignments, Teredo (whose IPv4 is obfuscated)
  ['2001:db8::/32', 'reserved'], // documentation
  ['3fff::/20', 'reserved'], // documentation (RFC 9637)
]);

/** Global unicast. IPv6 outside it is reserved, except the IPv4-embedding forms below; this also
 * covers the deprecated IPv4-compatible ::a.b.c.d, which nothing routes. */
const IPV6_GLOBAL_UNICAST = ranges([['2000::/3', 'public']]);

/** IPv6 forms that carry an IPv4 address: the IPv4 address decides. [range, offset of the IPv4]. */
const IPV4_EMBEDDING: Array<[Range, number]> = [
  [ranges([['::ffff:0:0/96', 'reserved']])[0], 12], // IPv4-mapped (::ffff:127.0.0.1)
  [ranges([['64:ff9b::/96', 'reserved']])[0], 12], // NAT64 well-known prefix
  [ranges([['2002::/16', 'reserved']])[0], 2], // 6to4
];

/**
 * Classifies an IPv4 or IPv6 address (brackets and a %zone are accepted). Returns null when
 * `address` is not an IP address.
 */
export function classifyAddress(address: string): AddressClassification | null {
  const bytes = parseIp(address);
  if (bytes === null) return null;
  return bytes.length === 4 ? classifyV4(bytes) : classifyV6(bytes);
}

function classifyV4(bytes: Uint8Array): AddressClassification {
  const range = IPV4_RANGES.find((r) => inRange(bytes, r));
  const category = range?.category ?? 'public';
  return { category, description: DESCRIPTIONS[category] };
}

function classifyV6(bytes: Uint8Array): AddressClassification {
  for (const [range, offset] of IPV4_EMBEDDING) {
    if (inRange(bytes, range)) {
      const v4 = bytes.subarray(offset, offset + 4);
      const inner = classifyV4(v4);
      const description =
        inner.category === 'public' ? inner.description : `${inner.description} (IPv4 ${v4.join('.')} inside IPv6)`;
      return { category: inner.category, description };
    }
  }
  const range = IPV6_RANGES.find((r) => inRange(bytes, r));
  const category = range?.category ?? (inRange(bytes, IPV6_GLOBAL_UNICAST[0]) ? 'public' : 'reserved');
  return { category, description: DESCRIPTIONS[category] };
}

function inRange(bytes: Uint8Array, range: Range): boolean {
  if (bytes.length !== range.bytes.length) return false;
  const whole = range.prefix >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== range.bytes[i]) return false;
  const rest = range.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (bytes[whole] & mask) === (range.bytes[whole] & mask);
}

function ranges(table: Array<[string, AddressCategory]>): Range[] {
  return table.map(([cidr, category]) => {
    const [address, prefix] = cidr.split('/');
    const bytes = parseIp(address);
    if (bytes === null) throw new Error(`bad range ${cidr}`);
    return { bytes, prefix: Number(prefix), category };
  });
}

/** 4 bytes for IPv4, 16 for IPv6, null for anything else. */
function parseIp(input: string): Uint8Array | null {
  const unbracketed = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  const address = unbracketed.split('%')[0];
  switch (isIP(address)) {
    case 4:
      return Uint8Array.from(address.split('.').map(Number));
    case 6:
      return parseIpv6(address);
    default:
      return null;
  }
}

/** Expands a valid IPv6 text form (already checked by net.isIP) to 16 bytes. */
function parseIpv6(address: string): Uint8Array {
  let text = address;
  if (text.includes('.')) {
    // A trailing dotted quad (::ffff:1.2.3.4) becomes two hex groups.
    const cut = text.lastIndexOf(':') + 1;
    const [a, b, c, d] = text.slice(cut).split('.').map(Number);
    text = `${text.slice(0, cut)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array(8 - headGroups.length - tailGroups.length).fill('0');
  const groups = [...headGroups, ...zeros, ...tailGroups];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 0xff;
  });
  return bytes;
}
