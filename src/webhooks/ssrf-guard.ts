import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * The ranges of ipaddr.js (kept with the IANA special-purpose registries) decide: only an
 * address of its 'unicast' range may be reached unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=true.
 * Everything else (private, loopback, link-local, CGNAT, documentation, benchmarking, 6to4,
 * Teredo, NAT64, multicast, reserved...) is refused. An IPv4-mapped IPv6 address is judged by
 * its IPv4 address.
 */
export function isForbiddenAddress(address: string): boolean {
  if (!ipaddr.isValid(address) || net.isIP(address) === 0) return true;
  const parsed = ipaddr.process(address);
  // ::a.b.c.d (IPv4-compatible, deprecated by RFC 4291) is 'unicast' to ipaddr.js but reaches an IPv4 host on some stacks
  if (parsed.kind() === 'ipv6' && parsed.match(IPV4_COMPATIBLE)) return true;
  return parsed.range() !== 'unicast';
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
