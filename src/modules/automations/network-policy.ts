// Decides which network addresses a webhook or workspace SMTP account may reach: public unicast only (no loopback,
// private or special ranges).
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** IANA special-purpose ranges (RFC 6890 and successors) that a server-side request must never reach. */
const SPECIAL_PURPOSE_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata endpoints live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

const SPECIAL_PURPOSE_V6: Array<[string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated): would reach the embedded IPv4 address
  ['64:ff9b::', 96], // NAT64: would reach the embedded IPv4 address
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo included)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: would reach the embedded IPv4 address
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

const blocked = new BlockList();
for (const [network, prefix] of SPECIAL_PURPOSE_V4) blocked.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of SPECIAL_PURPOSE_V6) blocked.addSubnet(network, prefix, 'ipv6');

/**
 * True for a public unicast IP address. BlockList also applies the IPv4 rules to IPv4-mapped IPv6 addresses
 * (`::ffff:127.0.0.1`), so those cannot sneak past either.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The host of a URL as DNS or `isIP` expect it: without IPv6 brackets or a trailing root dot, lower-cased. */
export function bareHostname(url: URL): string {
  return url.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
}

/**
 * The check possible without DNS (at rule creation): a literal non-public IP or a `localhost` name is refused.
 * Names that resolve to private addresses are caught when the webhook runs.
 */
export function isObviouslyPrivateHost(hostname: string): boolean {
  if (isIP(hostname) !== 0) return !isPublicAddress(hostname);
  return hostname === 'localhost' || hostname.endsWith('.localhost');
}

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address of a host (a literal IP is its own answer), so the caller can check all of them before connecting. */
export async function resolveHost(hostname: string): Promise<ResolvedAddress[]> {
  const family = isIP(hostname);
  return family !== 0 ? [{ address: hostname, family }] : lookup(hostname, { all: true, verbatim: true });
}
