import dns from 'node:dns';
import net from 'node:net';
import { Agent, buildConnector } from 'undici';

/** Destinations a status event may not reach unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=true. */
const FORBIDDEN = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) FORBIDDEN.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 96], // unspecified, loopback, IPv4-compatible
  ['64:ff9b::', 96], // NAT64: an IPv4 address behind a translator
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) FORBIDDEN.addSubnet(network, prefix, 'ipv6');

const IPV4_MAPPED = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d in any notation). */
function mappedIpv4(address: string): string | undefined {
  const normalised = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const match = IPV4_MAPPED.exec(normalised);
  if (!match) return undefined;
  const high = parseInt(match[1]!, 16);
  const low = parseInt(match[2]!, 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** True for loopback, private, link-local, CGNAT, unspecified, multicast and reserved addresses (and anything that is not an IP address). */
export function isForbiddenAddress(address: string): boolean {
  switch (net.isIP(address)) {
    case 4:
      return FORBIDDEN.check(address, 'ipv4');
    case 6: {
      const ipv4 = mappedIpv4(address);
      return ipv4 !== undefined ? FORBIDDEN.check(ipv4, 'ipv4') : FORBIDDEN.check(address, 'ipv6');
    }
    default:
      return true;
  }
}

class ForbiddenDestinationError extends Error {
  readonly code = 'FORBIDDEN_DESTINATION';
  constructor(address: string) {
    super(`destination ${address} is a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is false)`);
    this.name = 'ForbiddenDestinationError';
  }
}

/** dns.lookup that never returns a forbidden address, so that a name with a public and a private address connects to the public one. */
const lookupAllowedOnly: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const allowed = addresses.filter((entry) => !isForbiddenAddress(entry.address));
    if (allowed.length === 0) return callback(new ForbiddenDestinationError(addresses[0]?.address ?? hostname), '', 0);
    if (options.all) return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, allowed);
    callback(null, allowed[0]!.address, allowed[0]!.family);
  });
};

export interface DeliveryAgentOptions {
  allowPrivateNetworks: boolean;
  connectionsPerHost: number;
  timeoutMs: number;
}

/**
 * The HTTP client of status events: keep-alive connections, at most connectionsPerHost per
 * origin, and unless private networks are allowed, every connection checked on the address
 * it actually reached (after DNS, so a name that resolves to 127.0.0.1 is refused too).
 */
export function createDeliveryAgent({ allowPrivateNetworks, connectionsPerHost, timeoutMs }: DeliveryAgentOptions): Agent {
  const options = { connections: connectionsPerHost, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: timeoutMs };
  if (allowPrivateNetworks) return new Agent(options);
  const connectGuarded = buildConnector({ timeout: timeoutMs, lookup: lookupAllowedOnly } as buildConnector.BuildOptions);
  return new Agent({
    ...options,
    connect(connectOptions, callback) {
      const literal = connectOptions.hostname.replace(/^\[(.*)\]$/, '$1');
      if (net.isIP(literal) && isForbiddenAddress(literal)) return callback(new ForbiddenDestinationError(literal), null);
      connectGuarded(connectOptions, (error, socket) => {
        if (error) return callback(error, null);
        const address = socket.remoteAddress;
        if (address === undefined || isForbiddenAddress(address)) {
          socket.destroy();
          return callback(new ForbiddenDestinationError(address ?? connectOptions.hostname), null);
        }
        callback(null, socket);
      });
    },
  });
}
