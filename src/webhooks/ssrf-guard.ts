import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';
import { badRequest } from '../http/errors.ts';

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

/** What kind of forbidden address it is, in the words of the refusals. */
function kindOf(address: string): string {
  const range = ipaddr.process(address).range();
  if (range === 'loopback') return 'loopback';
  if (range === 'private' || range === 'uniqueLocal' || range === 'carrierGradeNat') return 'private';
  if (range === 'linkLocal') return 'link-local';
  return 'reserved or special-purpose';
}

/**
 * Why a URL's host is refused without a DNS look-up, or undefined: a literal address that
 * isForbiddenAddress refuses, or a localhost name (RFC 6761: it resolves to loopback, and
 * delivery would refuse the address). Other names are checked at each delivery, on the
 * address actually connected to.
 */
export function refusedHost(hostname: string): string | undefined {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  if (net.isIP(host) !== 0) return isForbiddenAddress(host) ? `${host} is ${kindOf(host)}` : undefined;
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') ? `${name} is loopback` : undefined;
}

/**
 * At write time, the rule delivery applies: unless private networks are allowed, a status
 * subscriber URL or endpoint URL whose host refusedHost refuses is a 400 naming the field.
 */
export function checkDestination(field: string, url: string, allowPrivateNetworks: boolean): void {
  if (allowPrivateNetworks) return;
  const refused = refusedHost(new URL(url).hostname);
  if (refused !== undefined) throw badRequest(`${field}: private, loopback and link-local addresses are refused (WEBHOOK_ALLOW_PRIVATE_NETWORKS is false): ${refused}`);
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
      if (refusedHost(connectOptions.hostname) !== undefined) return callback(new ForbiddenDestinationError(connectOptions.hostname.replace(/^\[(.*)\]$/, '$1')), null);
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
