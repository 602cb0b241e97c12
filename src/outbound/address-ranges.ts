import { isIP } from 'node:net';

/**
 * The classes of IP addresses an outgoing request may or may not target (docs/security.md): parsing and
 * classification only, no I/O; the guard that resolves names and connects is in ssrf.ts. Own code
 * rather than net.BlockList because we need the class of an address (for the message) and must
 * look inside IPv6 forms that embed an IPv4 address.
 */

/** The class of an IP address; only `public` is a target by default. */
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

/** True when an address of this class may be called under the policy. */
export function isAllowedTarget(classification: AddressClassification, allowPrivateTargets: boolean): boolean {
  if (classification.category === 'public') return true;
  return allowPrivateTargets && classification.category !== 'metadata';
}

/** The IP address a URL host or connect host names literally (IPv6 without brackets), else null. */
export function literalIp(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}

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
  const zeros: string[] =
    tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill('0');
  const groups = [...headGroups, ...zeros, ...tailGroups];
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 0xff;
  });
  return bytes;
}
