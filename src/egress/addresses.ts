// Which addresses are public, judged on their bytes rather than their text. IPv6 is public only
// inside global unicast (2000::/3) and outside its special blocks: a form nobody listed (site-local,
// multicast, a new translation prefix) is internal by default. An IPv6 address that carries an
// IPv4 one (v4-mapped, v4-compatible, NAT64's 64:ff9b::/96, 6to4's 2002::/16) is judged as that
// IPv4 address, since a translator or relay would deliver it there. IPv4 is public outside the
// special-purpose registry's blocks that are not globally reachable.
import { BlockList, isIP } from 'node:net';

/** IPv4 blocks that are not globally reachable (loopback, private, shared, reserved, tests…). */
const V4_NOT_PUBLIC: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // the retired 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
];

/** Blocks inside 2000::/3 that are not public unicast (2002::/16 is judged by its IPv4). */
const V6_NOT_PUBLIC: readonly (readonly [string, number])[] = [
  ['2001::', 23], // IETF protocol assignments: Teredo, benchmarking, ORCHID…
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // segment routing identifiers
];

const V4 = new BlockList();
for (const [net, prefix] of V4_NOT_PUBLIC) V4.addSubnet(net, prefix, 'ipv4');
const V6 = new BlockList();
for (const [net, prefix] of V6_NOT_PUBLIC) V6.addSubnet(net, prefix, 'ipv6');

/**
 * Whether `address` (an IP literal) is a public unicast address. Anything else — internal,
 * reserved, not an address at all — is not.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !V4.check(address, 'ipv4');
  if (family !== 6) return false;
  const bytes = v6Bytes(address);
  if (!bytes) return false;
  const v4 = embeddedV4(bytes);
  if (v4 !== undefined) return isPublicAddress(v4);
  // Global unicast is 2000::/3: the first three bits 001.
  if ((bytes[0] as number) >> 5 !== 0b001) return false;
  return !V6.check(v6Text(bytes), 'ipv6');
}

/**
 * The IPv4 address an IPv6 one carries in a form that reaches it: ::ffff:a.b.c.d (mapped),
 * ::a.b.c.d (compatible; :: and ::1 among them), 64:ff9b::a.b.c.d (NAT64's well-known prefix),
 * 2002:aabb:ccdd::/48 (6to4).
 */
export function embeddedV4(bytes: Uint8Array): string | undefined {
  const zero = (from: number, to: number) => bytes.subarray(from, to).every((byte) => byte === 0);
  const dotted = (at: number) => Array.from(bytes.subarray(at, at + 4)).join('.');
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return dotted(12);
  if (zero(0, 12)) return dotted(12);
  const nat64 = [0x00, 0x64, 0xff, 0x9b];
  if (nat64.every((byte, index) => bytes[index] === byte) && zero(4, 12)) return dotted(12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return dotted(2);
  return undefined;
}

/** The 16 bytes of an IPv6 literal (a zone after `%` ignored), or undefined if it is not one. */
export function v6Bytes(text: string): Uint8Array | undefined {
  const address = text.replace(/%.*$/, '');
  if (isIP(address) !== 6) return undefined;
  let hex = address;
  // A trailing dotted quad is the last two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(hex);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    hex = `${hex.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = hex.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const front = groups(head);
  const back = groups(tail);
  const fill = tail === undefined ? [] : Array<string>(8 - front.length - back.length).fill('0');
  const all = [...front, ...fill, ...back];
  if (all.length !== 8) return undefined;
  const bytes = new Uint8Array(16);
  all.forEach((group, index) => {
    const value = Number.parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  });
  return bytes;
}

function v6Text(bytes: Uint8Array): string {
  const groups: string[] = [];
  for (let index = 0; index < 16; index += 2)
    groups.push((((bytes[index] as number) << 8) | (bytes[index + 1] as number)).toString(16));
  return groups.join(':');
}
