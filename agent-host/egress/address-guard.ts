import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";

// The address classes no allow-list opens (docs/architecture.md §13): whatever a name resolves
// to, a connection to one of these is refused. IPv4-mapped and NAT64 IPv6 forms are folded
// back to their IPv4 address first, so `::ffff:127.0.0.1` is loopback too.

const DENIED_V4: readonly [string, number][] = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // RFC 1918
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local: cloud metadata
  ["172.16.0.0", 12], // RFC 1918
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // RFC 1918
  ["198.18.0.0", 15], // benchmarking (often internal)
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

const DENIED_V6: readonly [string, number][] = [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["fc00::", 7], // unique-local
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
  ["100::", 64], // discard
];

export type AddressRefusal = "private_address" | "node_address" | "bad_address";

export type AddressGuard = {
  /** Why `address` may not be connected to, or undefined when it may. */
  refusal(address: string): AddressRefusal | undefined;
};

export type AddressGuardOptions = {
  /** Private CIDRs the operator opened for the whole deployment (EGRESS_OPEN_CIDRS). */
  readonly openCidrs?: readonly string[];
  /** The node's own addresses; default: every interface's (os.networkInterfaces). */
  readonly nodeAddresses?: readonly string[];
};

/** IPv4 inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) address. */
function embeddedV4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted !== null) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex === null) return undefined;
  const high = Number.parseInt(hex[1] ?? "0", 16);
  const low = Number.parseInt(hex[2] ?? "0", 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

function parseCidr(text: string): [string, number, "ipv4" | "ipv6"] {
  const [address = "", bits = ""] = text.split("/");
  const family = isIP(address);
  const prefix = Number(bits);
  if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128))
    throw new Error(`not a CIDR: ${text}`);
  return [address, prefix, family === 4 ? "ipv4" : "ipv6"];
}

export function createAddressGuard(options: AddressGuardOptions = {}): AddressGuard {
  const denied = new BlockList();
  for (const [address, prefix] of DENIED_V4) denied.addSubnet(address, prefix, "ipv4");
  for (const [address, prefix] of DENIED_V6) denied.addSubnet(address, prefix, "ipv6");
  const opened = new BlockList();
  for (const cidr of options.openCidrs ?? []) opened.addSubnet(...parseCidr(cidr));
  const own = new BlockList();
  const nodeAddresses =
    options.nodeAddresses ??
    Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
  for (const address of nodeAddresses) {
    const family = isIP(address);
    if (family !== 0) own.addAddress(address, family === 4 ? "ipv4" : "ipv6");
  }
  return {
    refusal(raw) {
      const v4 = embeddedV4(raw);
      const address = v4 ?? raw;
      const family = isIP(address);
      if (family === 0) return "bad_address";
      const type = family === 4 ? "ipv4" : "ipv6";
      if (denied.check(address, type) && !opened.check(address, type)) return "private_address";
      // The node's own addresses stay closed even inside an opened CIDR.
      return own.check(address, type) ? "node_address" : undefined;
    },
  };
}
